//! `#[clawtest::harness]`: checks the shape `async fn name(env: Env) -> Result<String, E>` with
//! errors at the attribute, keeps the function as written, and adds a compile-time check (at
//! the function's name) that it really is a harness: `Send` future, `E: Display`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{FnArg, GenericArgument, ItemFn, PathArguments, ReturnType, Type};

pub fn expand(attribute: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let here = Span::call_site();
    if !attribute.is_empty() {
        return Err(syn::Error::new(
            here,
            "#[clawtest::harness] takes no arguments",
        ));
    }
    let function: ItemFn = syn::parse2(item).map_err(|_| {
        syn::Error::new(
            here,
            "#[clawtest::harness] goes on an `async fn(env: clawtest::Env) -> Result<String, E>`",
        )
    })?;
    let signature = &function.sig;
    let expected = "expected `async fn(env: clawtest::Env) -> Result<String, E>`";
    if signature.asyncness.is_none() {
        return Err(syn::Error::new(
            here,
            format!(
                "#[clawtest::harness]: `{}` is not async; {expected}",
                signature.ident
            ),
        ));
    }
    if !signature.generics.params.is_empty() {
        return Err(syn::Error::new(
            here,
            format!(
                "#[clawtest::harness]: `{}` cannot be generic; {expected}",
                signature.ident
            ),
        ));
    }
    let inputs: Vec<&FnArg> = signature.inputs.iter().collect();
    if inputs.len() != 1 || matches!(inputs[0], FnArg::Receiver(_)) {
        return Err(syn::Error::new(
            here,
            format!(
                "#[clawtest::harness]: `{}` takes {} argument(s); {expected}",
                signature.ident,
                inputs.len()
            ),
        ));
    }
    if !returns_result_of_string(&signature.output) {
        return Err(syn::Error::new(
            here,
            format!(
                "#[clawtest::harness]: `{}` must return `Result<String, E>` (the final answer, or an error that is shown as the harness's stderr); {expected}",
                signature.ident
            ),
        ));
    }
    let name = &signature.ident;
    let check = quote_spanned! {name.span()=>
        const _: fn() = || {
            ::clawtest::__private::assert_harness(&#name);
        };
    };
    Ok(quote! {
        #function
        #check
    })
}

/// `-> Result<String, _>` (any path ending in `Result`, e.g. `anyhow::Result<String>`).
fn returns_result_of_string(output: &ReturnType) -> bool {
    let ReturnType::Type(_, returned) = output else {
        return false;
    };
    let Type::Path(path) = returned.as_ref() else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    if last.ident != "Result" {
        return false;
    }
    let PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return false;
    };
    matches!(
        arguments.args.first(),
        Some(GenericArgument::Type(Type::Path(first))) if first.path.is_ident("String")
    )
}
