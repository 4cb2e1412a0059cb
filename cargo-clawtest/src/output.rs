//! Standard output for every command: `out!` and `outln!`. A reader that went away
//! (`cargo clawtest validate | head`) is not an error: the rest of the output is dropped and the
//! command still ends with its exit code. Any other failure to write is reported once on
//! standard error.
//!
//! `say!` and `sayln!` are standard output for people (what a task, a model or an agent wrote
//! may be in it), escaped like `errln!`; `out!` and `outln!` are for what a program reads
//! (JSON, the schema, clawtest's own annotation lines), unchanged.
//!
//! `errln!` is standard error for people: its text goes through
//! [`clawtest::escape::terminal`], since an error or a warning may quote what an agent, a model
//! or a task wrote, and on CI standard error is the job log GitHub scans for commands.

/// Prints to standard output (see the module's doc for what happens when it is closed).
macro_rules! out {
    ($($argument:tt)*) => {
        $crate::output::write_out(format_args!($($argument)*))
    };
}

/// `out!` with a newline.
macro_rules! outln {
    ($($argument:tt)*) => {
        $crate::output::write_out(format_args!("{}\n", format_args!($($argument)*)))
    };
}

/// Prints to standard output for people, escaped for a terminal and a CI log.
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::output::write_out(format_args!(
            "{}",
            clawtest::escape::terminal(&format!($($argument)*))
        ))
    };
}

/// `say!` with a newline.
macro_rules! sayln {
    ($($argument:tt)*) => {
        $crate::output::write_out(format_args!(
            "{}\n",
            clawtest::escape::terminal(&format!($($argument)*))
        ))
    };
}

/// Prints a line to standard error, escaped for a terminal and a CI log.
macro_rules! errln {
    ($($argument:tt)*) => {
        $crate::output::write_error(&format!($($argument)*))
    };
}

pub fn write_error(text: &str) {
    use std::io::Write;
    // Standard error closed: nothing else can be told.
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        clawtest::escape::terminal(text)
    );
}

pub fn write_out(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};

    static FAILED: AtomicBool = AtomicBool::new(false);
    if FAILED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(error) = std::io::stdout().lock().write_fmt(text) {
        FAILED.store(true, Ordering::Relaxed);
        if error.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to standard output: {error}");
        }
    }
}
