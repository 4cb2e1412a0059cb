//! `clawtest::main!(…)`: the `fn main` of a `harness = false` test target, handing the settings
//! to `clawtest::__private::main`, which finds the tasks when the binary runs.

use proc_macro2::TokenStream;
use quote::quote;

use crate::arguments::{Settings, parse_list};

pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let settings = Settings::from_arguments(
        parse_list(input)?,
        &["harness", "trials", "suite", "config", "snapshots"],
    )?;
    let harness = settings.harness_tokens(Clone::clone);
    let trials = settings.trials_tokens();
    let snapshot = settings.snapshot_tokens();
    let suite = match &settings.suite {
        Some(suite) => quote!(#suite),
        None => quote!(::core::env!("CARGO_CRATE_NAME")),
    };
    let config = match &settings.config {
        Some(config) => quote!(::core::option::Option::Some(#config)),
        None => quote!(::core::option::Option::None),
    };
    Ok(quote! {
        ::clawtest::__private::require_libtest!();
        fn main() -> ::std::process::ExitCode {
            ::clawtest::__private::main(::clawtest::__private::MainOptions {
                manifest_dir: ::core::env!("CARGO_MANIFEST_DIR"),
                suite: ::std::string::String::from(#suite),
                config: #config,
                harness: #harness,
                trials: #trials,
                snapshot: #snapshot,
            })
        }
    })
}
