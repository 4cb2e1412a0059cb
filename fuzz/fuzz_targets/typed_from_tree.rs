//! Fuzz target: every input through the check in `fuzz/checks/typed_from_tree.rs` (its doc says what it
//! asserts).

#![no_main]

#[path = "../checks/typed_from_tree.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
