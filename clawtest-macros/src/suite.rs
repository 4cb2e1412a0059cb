//! `#[clawtest::suite("glob", …)] fn name() {}`: finds the task files at compile time (relative
//! to the crate's folder) and expands to `mod name { #[test] fn <file stem>() … }`, one test per
//! file, each with an `include_bytes!` of its file so that editing a task rebuilds the tests.
//! A proc macro cannot watch a folder on stable Rust, so a new file needs a rebuild.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{ItemFn, LitStr, Token};

use crate::arguments::{Argument, Settings};

/// Folders never searched (build output, VCS metadata).
const SKIPPED: &[&str] = &["target", ".git"];

struct SuiteArguments {
    glob: LitStr,
    rest: Punctuated<Argument, Token![,]>,
}

impl syn::parse::Parse for SuiteArguments {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<SuiteArguments> {
        let glob: LitStr = input.parse().map_err(|error| {
            syn::Error::new(
                error.span(),
                "#[clawtest::suite] starts with a glob of task files, e.g. #[clawtest::suite(\"tasks/**/*.yaml\")]",
            )
        })?;
        let rest = if input.is_empty() {
            Punctuated::new()
        } else {
            input.parse::<Token![,]>()?;
            Punctuated::parse_terminated(input)?
        };
        Ok(SuiteArguments { glob, rest })
    }
}

pub fn expand(attribute: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let here = Span::call_site();
    let SuiteArguments { glob, rest } = syn::parse2(attribute)?;
    let settings = Settings::from_arguments(rest, &["harness", "trials", "snapshots"])?;
    let function: ItemFn = syn::parse2(item)
        .map_err(|_| syn::Error::new(here, "#[clawtest::suite] goes on a `fn name() {}`"))?;
    if !function.sig.inputs.is_empty() || !function.block.stmts.is_empty() {
        return Err(syn::Error::new(
            here,
            "#[clawtest::suite] goes on an empty `fn name() {}`: its name names the module of tests, and its body would never run",
        ));
    }
    let matcher = globset::Glob::new(&glob.value())
        .map_err(|error| {
            syn::Error::new(
                glob.span(),
                format!("`{}` is not a valid glob: {error}", glob.value()),
            )
        })?
        .compile_matcher();
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|_| {
            syn::Error::new(here, "CARGO_MANIFEST_DIR is not set: build with cargo")
        })?);
    let mut files = Vec::new();
    collect(&root, &root, &matcher, &mut files).map_err(|error| {
        syn::Error::new(
            glob.span(),
            format!("cannot search {}: {error}", root.display()),
        )
    })?;
    files.sort();
    if files.is_empty() {
        return Err(syn::Error::new(
            glob.span(),
            format!(
                "no task file matches `{}` (globs are relative to the crate's folder, where Cargo.toml is)",
                glob.value()
            ),
        ));
    }

    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    let mut tests = Vec::new();
    let harness = settings.harness_tokens(from_inner_module);
    let trials = settings.trials_tokens();
    let snapshot = settings.snapshot_tokens();
    for relative in &files {
        let shown = relative.to_string_lossy().replace('\\', "/");
        let name = test_name(relative);
        if let Some(previous) = by_name.insert(name.clone(), shown.clone()) {
            return Err(syn::Error::new(
                glob.span(),
                format!(
                    "`{previous}` and `{shown}` would both be the test `{name}`: rename one of the files"
                ),
            ));
        }
        let ident = format_ident!("{}", name);
        let absolute = root.join(relative).to_string_lossy().into_owned();
        tests.push(quote! {
            #[test]
            fn #ident() -> ::core::result::Result<(), ::clawtest::__private::Failure> {
                const _: &[u8] = ::core::include_bytes!(#absolute);
                ::clawtest::__private::run_task_file(
                    ::core::env!("CARGO_MANIFEST_DIR"),
                    #shown,
                    #harness,
                    #trials,
                    #snapshot,
                )
            }
        });
    }
    let visibility = &function.vis;
    let module = &function.sig.ident;
    let attributes = &function.attrs;
    // Checked outside the tests too, so that a plain build (not only `cargo test`) says it.
    let requirement = settings
        .snapshots
        .then(|| quote!(::clawtest::__private::require_insta!();));
    Ok(quote! {
        #(#attributes)*
        #visibility mod #module {
            #requirement
            #(#tests)*
        }
    })
}

/// Every file under `folder` whose path relative to `root` matches.
fn collect(
    root: &Path,
    folder: &Path,
    matcher: &globset::GlobMatcher,
    files: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            let skipped = entry
                .file_name()
                .to_str()
                .is_some_and(|name| SKIPPED.contains(&name));
            if !skipped {
                collect(root, &path, matcher, files)?;
            }
        } else if let Ok(relative) = path.strip_prefix(root)
            && matcher.is_match(relative)
        {
            files.push(relative.to_path_buf());
        }
    }
    Ok(())
}

/// A file's stem as an identifier: `todo-triage.yaml` → `todo_triage`.
fn test_name(relative: &Path) -> String {
    let stem = relative
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|character: char| character.is_ascii_digit()) {
        name.insert_str(0, "task_");
    }
    if syn::parse_str::<syn::Ident>(&name).is_err() {
        name.push('_');
    }
    name
}

/// The tests live one module down: a path relative to the function's module gets `super::`.
fn from_inner_module(path: &syn::Path) -> syn::Path {
    let first = path
        .segments
        .first()
        .map(|segment| segment.ident.to_string());
    if path.leading_colon.is_some() || first.as_deref() == Some("crate") {
        return path.clone();
    }
    let mut resolved: syn::Path = syn::parse_quote!(super);
    let mut segments = path.segments.iter().peekable();
    if first.as_deref() == Some("self") {
        segments.next();
    }
    for segment in segments {
        resolved.segments.push(segment.clone());
    }
    resolved
}
