//! The `key = value` arguments shared by the macros, parsed into [`Settings`] with errors at
//! the offending key or value.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, Path, Token};

/// One `key = value`.
pub struct Argument {
    pub key: syn::Ident,
    pub value: Expr,
}

impl Parse for Argument {
    fn parse(input: ParseStream) -> syn::Result<Argument> {
        let key: syn::Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        Ok(Argument { key, value })
    }
}

/// Everything a macro can be told.
#[derive(Default)]
pub struct Settings {
    pub harness: Option<Path>,
    pub trials: Option<syn::LitInt>,
    pub suite: Option<LitStr>,
    pub config: Option<LitStr>,
    pub snapshots: bool,
}

impl Settings {
    /// Reads `arguments`, accepting only the keys in `allowed`.
    pub fn from_arguments(
        arguments: Punctuated<Argument, Token![,]>,
        allowed: &[&str],
    ) -> syn::Result<Settings> {
        let mut settings = Settings::default();
        for Argument { key, value } in arguments {
            let name = key.to_string();
            if !allowed.contains(&name.as_str()) {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown key `{name}`; expected one of: {}",
                        allowed.join(", ")
                    ),
                ));
            }
            match name.as_str() {
                "harness" => match value {
                    Expr::Path(path) => settings.harness = Some(path.path),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "`harness` takes the path of a #[clawtest::harness] async fn, e.g. `harness = my_agent`",
                        ));
                    }
                },
                "trials" => match value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Int(trials),
                        ..
                    }) if trials.base10_parse::<u32>().is_ok_and(|trials| trials > 0) => {
                        settings.trials = Some(trials)
                    }
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "`trials` takes a whole number of at least 1, e.g. `trials = 3`",
                        ));
                    }
                },
                "suite" | "config" => match value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(text),
                        ..
                    }) => {
                        if name == "suite" {
                            settings.suite = Some(text);
                        } else {
                            settings.config = Some(text);
                        }
                    }
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            format!("`{name}` takes a string literal"),
                        ));
                    }
                },
                "snapshots" => match value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Bool(flag),
                        ..
                    }) => settings.snapshots = flag.value,
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "`snapshots` takes `true` or `false`",
                        ));
                    }
                },
                _ => unreachable!("checked against `allowed` above"),
            }
        }
        Ok(settings)
    }

    /// `Some(RustHarness::new("name", path))` or `None`, with `path` rewritten by `resolve`.
    pub fn harness_tokens(&self, resolve: impl Fn(&Path) -> Path) -> TokenStream {
        match &self.harness {
            Some(path) => {
                let name = path
                    .segments
                    .last()
                    .map(|segment| segment.ident.to_string())
                    .unwrap_or_default();
                let resolved = resolve(path);
                quote!(::core::option::Option::Some(
                    ::clawtest::__private::RustHarness::new(#name, #resolved)
                ))
            }
            None => quote!(::core::option::Option::None),
        }
    }

    pub fn trials_tokens(&self) -> TokenStream {
        match &self.trials {
            Some(trials) => quote!(::core::option::Option::Some(#trials)),
            None => quote!(::core::option::Option::None),
        }
    }

    /// The snapshot hook: insta, expanded in the caller's crate so that snapshots live in its
    /// `snapshots/` folder and `cargo insta review` finds them.
    pub fn snapshot_tokens(&self) -> TokenStream {
        if !self.snapshots {
            return quote!(::core::option::Option::None);
        }
        quote!(::core::option::Option::Some({
            ::clawtest::__private::require_insta!();
            fn snapshot(verdict: &::clawtest::__private::Verdict) {
                let mut settings = ::clawtest::__private::insta::Settings::clone_current();
                settings.set_snapshot_path(::core::concat!(
                    ::core::env!("CARGO_MANIFEST_DIR"),
                    "/snapshots"
                ));
                settings.set_prepend_module_to_snapshot(false);
                settings.set_omit_expression(true);
                settings.bind(|| {
                    // The same breakdown as `run --snapshots` writes.
                    ::clawtest::__private::insta::assert_snapshot!(
                        verdict.task_id.as_str(),
                        ::clawtest::__private::snapshot_content(verdict)
                    );
                });
            }
            snapshot as ::clawtest::__private::SnapshotHook
        }))
    }
}

/// `key = value, …` as a whole macro input.
pub fn parse_list(input: TokenStream) -> syn::Result<Punctuated<Argument, Token![,]>> {
    syn::parse::Parser::parse2(Punctuated::<Argument, Token![,]>::parse_terminated, input)
}
