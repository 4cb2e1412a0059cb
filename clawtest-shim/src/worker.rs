//! A worker container's shim: one trial after another in the same container, each asked for
//! on the worker socket, with nothing of one trial left for the next ([`crate::reset`]).
//!
//! The conversation, one line at a time, every free text hex-encoded (a prompt holds
//! newlines):
//!
//! - the shim connects to the worker socket, takes the container's baseline and says `ready`,
//!   or `refused HEX` when it could not promise a clean reset (it is not the container's
//!   first process, say): the host then runs its trials in one-shot containers;
//! - the host asks for a trial: `arg HEX`…, `env HEX`… (each `NAME=VALUE`), `timeout
//!   SECONDS`, `stdout PATH`, `stderr PATH`, then `run`. The shim runs the harness as the
//!   one-shot shim does (its variables: the shim's own, the image's, with the trial's over
//!   them) and answers `said HEX` when it said something meanwhile, then the report line
//!   (`exit N`, `signal N`, `timeout`, `error MESSAGE`);
//! - the host runs its checks (execs in the container), then says `reset`: the shim ends every
//!   process but itself and puts back what the container can write, and answers `clean`, or
//!   `dirty HEX` when it could not (the host then removes the container);
//! - the host hanging up, or dying, ends every process and the shim: the container ends and
//!   the engine removes it. The shim's one thread reads the host's lines, and watches for the
//!   hang-up while a harness runs ([`crate::wait`]); it notices one during a reset when the
//!   reset is done.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;

use crate::reset::{self, Baseline};
use crate::{HARNESS_DONE, Harness, IN_WORKER, SAID, STOPPING, run_harness};

unsafe extern "C" {
    fn prctl(option: i32, ...) -> i32;
}

const PR_SET_DUMPABLE: i32 = 4;

/// What the host asks of the worker.
#[derive(Debug, PartialEq)]
enum Request {
    /// Run this harness.
    Run(Harness),
    /// Put the container back as the worker found it.
    Reset,
}

/// Serves trials asked for on `socket` until the host hangs up; never returns.
pub(crate) fn run(socket: &str, host_empties: &[String]) -> ! {
    IN_WORKER.store(true, Ordering::SeqCst);
    // No harness yet: a stop request ends the shim at once.
    HARNESS_DONE.store(true, Ordering::SeqCst);
    let connection = UnixStream::connect(socket).unwrap_or_else(|error| {
        eprintln!("clawtest-shim: cannot reach the worker socket {socket}: {error}");
        std::process::exit(2);
    });
    let Ok(mut answers) = connection.try_clone() else {
        std::process::exit(2);
    };
    let baseline = if std::process::id() == 1 {
        Baseline::take(host_empties)
    } else {
        Err("the shim is not the container's first process: it cannot end the others".into())
    };
    // Not dumpable: a harness (the same user) can neither trace the shim nor read its memory,
    // so it cannot make the shim skip a reset or keep one of its processes alive.
    // SAFETY: prctl with PR_SET_DUMPABLE takes one integer argument.
    unsafe {
        prctl(PR_SET_DUMPABLE, 0);
    }
    let greeting = match &baseline {
        Ok(_) => "ready\n".to_string(),
        Err(why) => format!("refused {}\n", hex(why.as_bytes())),
    };
    if answers.write_all(greeting.as_bytes()).is_err() {
        leave();
    }
    let Ok(baseline) = baseline else {
        // The host hangs up and the container ends.
        wait_for_hang_up(connection);
    };
    let mut lines = BufReader::new(connection);
    loop {
        let request = match next_request(&mut lines) {
            None => leave(),
            Some(Ok(request)) => request,
            Some(Err(message)) => {
                // The report of a trial that could not start.
                let message = message.replace(['\n', '\r'], " ");
                let _ = answers.write_all(format!("error {message}\n").as_bytes());
                continue;
            }
        };
        let answer = match request {
            Request::Run(harness) => run_trial(&harness, lines.get_ref()),
            Request::Reset => match reset::reset(&baseline) {
                Ok(()) => "clean\n".to_string(),
                Err(why) => format!("dirty {}\n", hex(why.as_bytes())),
            },
        };
        if answers.write_all(answer.as_bytes()).is_err() {
            leave();
        }
    }
}

/// Runs one trial's harness; the answer: what the shim said meanwhile, then the report. The
/// host hanging up on `connection` meanwhile ends everything.
fn run_trial(harness: &Harness, connection: &UnixStream) -> String {
    if let Ok(mut said) = SAID.lock() {
        said.clear();
    }
    HARNESS_DONE.store(false, Ordering::SeqCst);
    let Ok(report) = run_harness(harness, Some(connection.as_fd())) else {
        leave();
    };
    HARNESS_DONE.store(true, Ordering::SeqCst);
    if STOPPING.load(Ordering::SeqCst) {
        // The container is being stopped: the harness has ended, and so does the shim.
        std::process::exit(0);
    }
    let said = SAID
        .lock()
        .map(|mut said| std::mem::take(&mut *said))
        .unwrap_or_default();
    let mut answer = String::new();
    if !said.is_empty() {
        answer.push_str(&format!("said {}\n", hex(said.as_bytes())));
    }
    answer.push_str(&report.line());
    answer
}

/// Reads `connection` until the host hangs up, then leaves.
fn wait_for_hang_up(connection: UnixStream) -> ! {
    let mut reader = BufReader::new(connection);
    let mut line = String::new();
    while matches!(reader.read_line(&mut line), Ok(read) if read > 0) {
        line.clear();
    }
    leave();
}

/// Ends every process of the container and the shim.
fn leave() -> ! {
    let _ = reset::end_every_process();
    std::process::exit(0);
}

/// The next request from the host's lines; `None` when the host hung up. A line it cannot
/// read makes the request an error, read to its end (`run`) all the same, so the next one
/// starts at its first line.
fn next_request(lines: &mut impl BufRead) -> Option<Result<Request, String>> {
    let mut harness = Harness::default();
    let mut refused = None;
    let mut line = String::new();
    loop {
        line.clear();
        if !matches!(lines.read_line(&mut line), Ok(read) if read > 0) {
            return None;
        }
        let line = line.trim_end();
        let (word, value) = line.split_once(' ').unwrap_or((line, ""));
        let read = match word {
            "reset" => return Some(Ok(Request::Reset)),
            "run" => {
                return Some(match refused {
                    Some(why) => Err(why),
                    None => Ok(Request::Run(harness)),
                });
            }
            "arg" => unhex_text(value).map(|arg| harness.command.push(arg)),
            "env" => unhex_text(value).and_then(|pair| match pair.split_once('=') {
                Some((name, value)) => {
                    harness.env.push((name.to_string(), value.to_string()));
                    Ok(())
                }
                None => Err(format!("env {pair}: expected NAME=VALUE")),
            }),
            "timeout" => crate::seconds(value).map(|limit| harness.timeout = Some(limit)),
            "stdout" => {
                harness.stdout = Some(value.to_string());
                Ok(())
            }
            "stderr" => {
                harness.stderr = Some(value.to_string());
                Ok(())
            }
            other => Err(format!("unknown request line `{other}`")),
        };
        if let Err(why) = read {
            refused.get_or_insert(why);
        }
    }
}

/// Bytes as lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Hex back to UTF-8 text.
fn unhex_text(text: &str) -> Result<String, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("`{text}` is not hex"));
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|at| {
            text.get(at..at + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("`{text}` is not hex"))
        })
        .collect::<Result<Vec<u8>, String>>()?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lines(lines: &[&str]) -> std::io::Cursor<String> {
        std::io::Cursor::new(lines.iter().map(|line| format!("{line}\n")).collect())
    }

    #[test]
    fn a_trial_request_reads_back_as_the_host_wrote_it() {
        let prompt = "PROMPT=two\nlines";
        let mut requests = lines(&[
            &format!("arg {}", hex(b"/agent")),
            &format!("arg {}", hex("--mode=ü".as_bytes())),
            &format!("env {}", hex(prompt.as_bytes())),
            "timeout 1.500",
            "stdout /clawtest/sockets/stdout.sock",
            "stderr /clawtest/sockets/stderr.sock",
            "run",
            "reset",
        ]);
        assert_eq!(
            next_request(&mut requests),
            Some(Ok(Request::Run(Harness {
                command: vec!["/agent".into(), "--mode=ü".into()],
                timeout: Some(Duration::from_millis(1500)),
                stdout: Some("/clawtest/sockets/stdout.sock".into()),
                stderr: Some("/clawtest/sockets/stderr.sock".into()),
                env: vec![("PROMPT".into(), "two\nlines".into())],
            })))
        );
        assert_eq!(next_request(&mut requests), Some(Ok(Request::Reset)));
        assert_eq!(next_request(&mut requests), None, "the host hung up");
    }

    #[test]
    fn a_malformed_request_is_an_error_not_a_trial_and_the_next_one_reads() {
        let mut requests = lines(&[
            "arg 4",
            "run",
            "env 4142",
            "run",
            "launch",
            "run",
            &format!("arg {}", hex(b"/agent")),
            "run",
        ]);
        for _ in 0..3 {
            assert!(matches!(next_request(&mut requests), Some(Err(_))));
        }
        assert_eq!(
            next_request(&mut requests),
            Some(Ok(Request::Run(Harness {
                command: vec!["/agent".into()],
                ..Harness::default()
            })))
        );
    }
}
