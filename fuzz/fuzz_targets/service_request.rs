//! Fuzz target: every input through the check in `fuzz/checks/service_request.rs` (its doc says what it
//! asserts).

#![no_main]

#[path = "../checks/service_request.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
