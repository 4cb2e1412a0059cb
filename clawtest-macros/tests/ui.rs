//! Each misuse of the macros is a compile error that points at the attribute (or at the
//! offending argument) and says what to write instead. `TRYBUILD=overwrite cargo test -p
//! clawtest-macros` rewrites the expected `.stderr` files after a deliberate change.
//!
//! The cases build against `tests/stub` (named `clawtest`): the library's own `__private`
//! module over stand-ins for the types it re-exports, so that trybuild does not build the
//! library's dependencies (tokio, hyper, rustls, bollard) a second time in its own folder.

#[test]
fn misuse_is_a_located_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
