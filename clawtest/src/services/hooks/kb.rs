//! kb's hook: article search with ClawEnvKit's tokenizer (words, character bigrams, CJK
//! characters), filtered by category.

use serde_json::{Value, json};

use super::{HookInput, HookResult, is_cjk, records};
use crate::services::python::{self, truthy};
use crate::services::store::Collections;

/// `kb_search`: the articles sharing a token with `query`, each with a 150-character
/// snippet, at most `max_results` (default 5).
pub(super) fn search(input: &HookInput<'_>, store: &Collections) -> HookResult {
    let query = kb_tokens(&input.text("query"));
    let category = input.param("category");
    let mut found = Vec::new();
    for article in records(store, input.collection_name()) {
        if truthy(&category) && article.get("category").unwrap_or(&json!("")) != &category {
            continue;
        }
        let field = |k: &str| {
            article
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let tags: Vec<String> = article
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let searchable = format!("{} {} {}", field("title"), tags.join(" "), field("content"));
        if kb_tokens(&searchable).iter().any(|t| query.contains(t)) {
            let mut result = article.clone();
            let snippet: String = field("content").chars().take(150).collect();
            if let Value::Object(o) = &mut result {
                o.insert("snippet".into(), json!(format!("{snippet}...")));
            }
            found.push(result);
        }
    }
    python::truncate(&mut found, input.param("max_results").as_i64().unwrap_or(5));
    HookResult::items(found)
}

/// ClawEnvKit kb's tokenizer: lower-cased words, character bigrams, single CJK characters.
fn kb_tokens(text: &str) -> Vec<String> {
    let mut tokens: Vec<String> = text
        .to_lowercase()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let chars: Vec<char> = text.chars().collect();
    for pair in chars.windows(2) {
        if !(pair[0].is_whitespace() && pair[1].is_whitespace()) {
            tokens.push(pair.iter().collect::<String>().to_lowercase());
        }
    }
    tokens.extend(chars.iter().filter(|c| is_cjk(**c)).map(|c| c.to_string()));
    tokens
}
