//! The macros of clawtest's `cargo test` integration, re-exported by the `clawtest` crate:
//! `clawtest::main!` (a libtest-compatible `harness = false` test target that finds its tasks
//! at run time), `#[clawtest::suite]` (one `#[test]` per task file, found at compile time) and
//! `#[clawtest::harness]` (checks that an async fn can be a Rust harness). Expansions reach
//! clawtest only through `::clawtest::__private`, never through the caller's imports.

mod arguments;
mod harness;
mod main_macro;
mod suite;

use proc_macro::TokenStream;

/// Turns an `async fn(env: clawtest::Env) -> Result<String, E>` (with `E: Display`) into a
/// harness usable by `clawtest::main!(harness = …)` and `#[clawtest::suite(…, harness = …)]`;
/// a signature that cannot be one is a compile error at the attribute. The function itself is
/// unchanged.
#[proc_macro_attribute]
pub fn harness(attribute: TokenStream, item: TokenStream) -> TokenStream {
    harness::expand(attribute.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// One `#[test]` per task file matching the glob (relative to the crate's folder), in a module
/// named after the function: `#[clawtest::suite("tasks/**/*.yaml", harness = agent, trials = 3)]
/// fn tasks() {}`. Keys: `harness` (a `#[clawtest::harness]` fn; without it the configured
/// process harness runs), `trials`, `snapshots` (bool, needs clawtest's `insta` feature).
/// Editing a task file rebuilds the tests; a new file needs a rebuild (`touch` the source, or
/// use `clawtest::main!`, which finds tasks at run time).
#[proc_macro_attribute]
pub fn suite(attribute: TokenStream, item: TokenStream) -> TokenStream {
    suite::expand(attribute.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The `main` of a `harness = false` test target: `clawtest::main!(harness = agent)`. Keys, all
/// optional: `harness`, `trials`, `suite` (the first part of test names, default: the test
/// target's name), `config` (a clawtest.toml relative to the crate), `snapshots` (bool).
#[proc_macro]
pub fn main(input: TokenStream) -> TokenStream {
    main_macro::expand(input.into())
        .unwrap_or_else(|error| {
            // With the error, a `main` that does nothing, so that the error is the only one.
            let error = error.into_compile_error();
            quote::quote!(#error fn main() {})
        })
        .into()
}
