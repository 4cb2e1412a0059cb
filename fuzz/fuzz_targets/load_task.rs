//! Fuzz target: every input through the check in `fuzz/checks/load_task.rs` (its doc says what it
//! asserts).

#![no_main]

#[path = "../checks/load_task.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
