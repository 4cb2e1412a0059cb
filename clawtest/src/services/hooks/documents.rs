//! The hooks of the services an agent reads files through: ocr and caption look an image
//! up by path, documents extracts a PDF's text by page.

use serde_json::{Value, json};

use super::{HookInput, HookResult, records};
use crate::services::python;
use crate::services::store::Collections;

/// `find_image`: the item whose `image_path` is `image_path`, or has its file name or
/// stem; ClawEnvKit answers with the first item when nothing matches.
pub(super) fn find_image(input: &HookInput<'_>, store: &Collections) -> HookResult {
    let path = input.text("image_path");
    let items = records(store, input.collection_name());
    let name_of = |p: &str| p.rsplit('/').next().unwrap_or("").to_owned();
    let stem_of = |p: &str| {
        let name = name_of(p);
        match name.rfind('.') {
            Some(i) if i > 0 => name[..i].to_owned(),
            _ => name,
        }
    };
    let found = (!path.is_empty())
        .then(|| {
            items.iter().find(|item| {
                let item_path = item.get("image_path").and_then(Value::as_str).unwrap_or("");
                item_path == path
                    || name_of(item_path) == name_of(&path)
                    || stem_of(item_path) == stem_of(&path)
            })
        })
        .flatten();
    // ClawEnvKit answers with the first item when nothing matches.
    HookResult::record(found.or(items.first()).cloned().unwrap_or(json!({})))
}

/// `document_text`: a PDF's text, at most `max_pages` pages; 404 for an unknown path and
/// 400 for a file that is not a PDF, with FastAPI's `detail`.
pub(super) fn text(input: &HookInput<'_>, store: &Collections) -> HookResult {
    let raw = input.text("path");
    let wanted = raw
        .trim_start_matches("/workspace/")
        .trim_start_matches("./");
    let document = records(store, input.collection_name())
        .into_iter()
        .find(|d| {
            let path = d.get("path").and_then(Value::as_str).unwrap_or("");
            let path = path
                .trim_start_matches("/workspace/")
                .trim_start_matches("./");
            path == wanted
        });
    let Some(document) = document else {
        return HookResult {
            status: Some(404),
            ..HookResult::body(json!({"detail": format!("File not found: {raw}")}))
        };
    };
    if !wanted.to_ascii_lowercase().ends_with(".pdf") {
        return HookResult {
            status: Some(400),
            ..HookResult::body(json!({"detail": "Only PDF files are supported"}))
        };
    }
    // A file of the task that could not be read as a PDF: pypdf raised, and FastAPI answered
    // 500 with a generic detail; the reason is kept here, it helps whoever reads the trial.
    if let Some(error) = document.get("error").and_then(Value::as_str) {
        return HookResult {
            status: Some(500),
            ..HookResult::body(json!({"detail": format!("Could not read the PDF: {error}")}))
        };
    }
    let pages: Vec<String> = match document.get("pages").and_then(Value::as_array) {
        Some(pages) => pages
            .iter()
            .map(|p| p.as_str().unwrap_or("").to_owned())
            .collect(),
        None => vec![
            document
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        ],
    };
    let max = input
        .param("max_pages")
        .as_i64()
        .filter(|n| *n != 0)
        .unwrap_or(pages.len() as i64);
    let limit = max.clamp(i64::MIN, pages.len() as i64);
    let mut shown = pages.clone();
    python::truncate(&mut shown, limit);
    HookResult::body(json!({
        "path": wanted,
        "page_count": pages.len(),
        "pages_returned": limit,
        "text": shown.join("\n\n").trim(),
    }))
}
