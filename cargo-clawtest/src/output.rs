//! Standard output for every command: `out!` and `outln!`. A reader that went away
//! (`cargo clawtest validate | head`) is not an error: the rest of the output is dropped and the
//! command still ends with its exit code. Any other failure to write is reported once on
//! standard error.

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
