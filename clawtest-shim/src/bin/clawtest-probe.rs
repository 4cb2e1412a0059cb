//! clawtest-probe: a tiny std-only harness for testing sandboxes (static, so it runs in a
//! FROM scratch image). Each mode exercises one promise of the sandbox contract:
//!
//! - `env`: print the environment (no real secret may be in it);
//! - `connect HOST:PORT`: try an outbound TCP connection (exit 0 if it opened, 1 if not);
//! - `sleep`: never finish (the time limit must end it);
//! - `write FILE TEXT`: write a file in the working directory and print TEXT;
//! - `exit CODE`: exit with CODE;
//! - `remember FILE`: print FILE of the home folder when it is there, else write the prompt
//!   (`CLAWTEST_PROMPT`) to it and print `noted` (a harness whose memory is its home folder);
//! - `fill COUNT BYTES`: write COUNT files of BYTES zeros each in the working directory
//!   (`fill-0`, …), print `filled`, then never finish (a disk cap must end it);
//! - `link TARGET NAME`: plant a symbolic link NAME → TARGET (the host must not follow it),
//!   then print `linked NAME`;
//! - `leave`: leave things behind for the next trial in the same container: a process in a
//!   session of its own (`linger`), files named `left-behind` in `/tmp`, `$HOME`, `/dev/shm`,
//!   `/dev` and the workspace, and a System V shared memory segment; print `left`;
//! - `look`: print `found …` for each of those things still there, `passed=…` (the
//!   `CLAWTEST_PASSED` variable), the host name, then `looked`;
//! - `-c LINE`: LINE split at spaces, as one of the above (installed as `/bin/sh`, the probe
//!   is the shell a task's `exit_code` command is run with in a FROM scratch image).

use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::time::Duration;

unsafe extern "C" {
    fn setsid() -> i32;
    fn shmget(key: i32, size: usize, flags: i32) -> i32;
}

/// The key of the System V segment `leave` makes.
const SEGMENT_KEY: i32 = 0x1ef7;
const IPC_CREAT: i32 = 0o1000;

/// Where `leave` writes a `left-behind` file (`$HOME` added).
const PLACES: [&str; 4] = ["/tmp", "/dev/shm", "/dev", "."];

fn main() {
    let mut arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, line] = arguments.as_slice()
        && flag == "-c"
    {
        arguments = line.split_whitespace().map(str::to_owned).collect();
    }
    let words: Vec<&str> = arguments.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["env"] => {
            for (name, value) in std::env::vars() {
                println!("{name}={value}");
            }
        }
        ["connect", address] => {
            let Ok(address) = address.parse::<SocketAddr>() else {
                eprintln!("clawtest-probe: `{address}` is not HOST:PORT");
                std::process::exit(2);
            };
            match TcpStream::connect_timeout(&address, Duration::from_secs(3)) {
                Ok(_) => println!("connected to {address}"),
                Err(error) => {
                    println!("cannot connect to {address}: {error}");
                    std::process::exit(1);
                }
            }
        }
        ["sleep"] => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        ["write", file, text] => {
            if let Err(error) = std::fs::write(file, text) {
                eprintln!("clawtest-probe: cannot write {file}: {error}");
                std::process::exit(1);
            }
            println!("{text}");
        }
        ["exit", code] => std::process::exit(code.parse().unwrap_or(2)),
        ["remember", file] => {
            let path = std::path::Path::new(&std::env::var("HOME").unwrap_or_default()).join(file);
            match std::fs::read_to_string(&path) {
                Ok(kept) => println!("{kept}"),
                Err(_) => {
                    let prompt = std::env::var("CLAWTEST_PROMPT").unwrap_or_default();
                    if let Err(error) = std::fs::write(&path, prompt) {
                        eprintln!("clawtest-probe: cannot write {}: {error}", path.display());
                        std::process::exit(1);
                    }
                    println!("noted");
                }
            }
        }
        ["fill", count, bytes] => {
            let zeros = vec![0u8; bytes.parse().unwrap_or(0)];
            for index in 0..count.parse::<usize>().unwrap_or(0) {
                if let Err(error) = std::fs::write(format!("fill-{index}"), &zeros) {
                    eprintln!("clawtest-probe: cannot write fill-{index}: {error}");
                }
            }
            println!("filled");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        ["link", target, name] => {
            let _ = std::fs::remove_file(name);
            if let Err(error) = std::os::unix::fs::symlink(target, name) {
                println!("cannot link {name}: {error}");
                std::process::exit(1);
            }
            println!("linked {name}");
        }
        ["leave"] => leave(),
        ["linger"] => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        ["look"] => look(),
        _ => {
            eprintln!(
                "usage: clawtest-probe env | connect HOST:PORT | sleep | write FILE TEXT | exit CODE | fill COUNT BYTES | link TARGET NAME | leave | look | -c LINE"
            );
            std::process::exit(2);
        }
    }
}

/// The places `leave` writes to, `$HOME` among them.
fn places() -> Vec<std::path::PathBuf> {
    let home = std::env::var("HOME").unwrap_or_default();
    PLACES
        .iter()
        .map(std::path::PathBuf::from)
        .chain(std::iter::once(std::path::PathBuf::from(home)))
        .collect()
}

fn leave() {
    // SAFETY: setsid in the child between fork and exec only changes its session.
    let lingering = unsafe {
        std::process::Command::new("/proc/self/exe")
            .arg("linger")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .pre_exec(|| {
                setsid();
                Ok(())
            })
            .spawn()
    };
    if let Err(error) = lingering {
        println!("cannot leave a process: {error}");
    }
    for place in places() {
        // Some are not writable (`/dev` but for root): what can be left is left.
        let _ = std::fs::write(place.join("left-behind"), "from the trial before");
    }
    // SAFETY: shmget only makes a segment.
    if unsafe { shmget(SEGMENT_KEY, 4096, IPC_CREAT | 0o600) } < 0 {
        println!(
            "cannot leave a segment: {}",
            std::io::Error::last_os_error()
        );
    }
    println!("left");
}

fn look() {
    for place in places() {
        let path = place.join("left-behind");
        if std::fs::symlink_metadata(&path).is_ok() {
            println!("found {}", path.display());
        }
    }
    let own = std::process::id().to_string();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() || name == "1" || name == own {
            continue;
        }
        let command = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        println!(
            "found process {name}: {}",
            String::from_utf8_lossy(&command).replace('\0', " ")
        );
    }
    // SAFETY: shmget without IPC_CREAT only looks the segment up.
    if unsafe { shmget(SEGMENT_KEY, 0, 0) } >= 0 {
        println!("found the shared memory segment");
    }
    println!(
        "passed={}",
        std::env::var("CLAWTEST_PASSED").unwrap_or_default()
    );
    println!(
        "host {}",
        std::fs::read_to_string("/etc/hostname")
            .unwrap_or_default()
            .trim()
    );
    println!("looked");
}
