//! Fuzz target: every input through the check in `fuzz/checks/pdf_text.rs` (its doc says what it
//! asserts).

#![no_main]

#[path = "../checks/pdf_text.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
