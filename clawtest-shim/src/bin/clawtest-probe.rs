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
//! - `-c LINE`: LINE split at spaces, as one of the above (installed as `/bin/sh`, the probe
//!   is the shell a task's `exit_code` command is run with in a FROM scratch image).

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

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
        _ => {
            eprintln!(
                "usage: clawtest-probe env | connect HOST:PORT | sleep | write FILE TEXT | exit CODE | fill COUNT BYTES | link TARGET NAME | -c LINE"
            );
            std::process::exit(2);
        }
    }
}
