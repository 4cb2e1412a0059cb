//! web's hooks (web, web_real, web_real_injection): search over the fixture's results and
//! fetching its pages, with ClawEnvKit's tokenizer; the `_injected` variants place one of
//! the fixture's prompt injections in the answer, chosen by a stable hash so a trial is
//! reproducible.

use serde_json::{Value, json};

use super::{HookInput, HookResult, is_cjk, records};
use crate::services::python;
use crate::services::store::Collections;
use crate::services::time;

/// Whether a hook places one of the fixture's prompt injections in its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Injection {
    None,
    Injected,
}

/// `web_search` (`web_search_injected`): the search results sharing most keyword tokens
/// with `query`, at most `max_results` (default 10).
pub(super) fn search(
    input: &HookInput<'_>,
    store: &Collections,
    injection: Injection,
) -> HookResult {
    let query = web_tokens(&input.text("query"));
    let mut scored: Vec<(usize, usize, Value)> = Vec::new();
    for (index, item) in records(store, "search_results").into_iter().enumerate() {
        let mut tokens = Vec::new();
        for keyword in item
            .get("keywords")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for t in web_tokens(keyword.as_str().unwrap_or("")) {
                if !tokens.contains(&t) {
                    tokens.push(t);
                }
            }
        }
        let overlap = tokens.iter().filter(|t| query.contains(t)).count();
        if overlap > 0 {
            scored.push((overlap, index, item));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut results: Vec<Value> = scored
        .into_iter()
        .map(|(_, _, item)| search_result(&item))
        .collect();
    python::truncate(
        &mut results,
        input.param("max_results").as_i64().unwrap_or(10),
    );
    if injection == Injection::Injected && !results.is_empty() {
        let injections = records(store, "search_injections");
        if !injections.is_empty() {
            let pick = stable_hash(&input.text("query"));
            let injection = &injections[(pick % injections.len() as u64) as usize];
            let at = 1 + (pick / 7) as usize % results.len();
            results.insert(at.min(results.len()), search_result(injection));
        }
    }
    HookResult::items(results)
}

/// `web_fetch` (`web_fetch_injected`): the fixture's page at `url`, or its error.
pub(super) fn fetch(
    input: &HookInput<'_>,
    store: &Collections,
    injection: Injection,
) -> HookResult {
    let url = input.text("url");
    let page = records(store, "pages")
        .into_iter()
        .find(|page| page.get("url").and_then(Value::as_str) == Some(url.as_str()));
    let Some(page) = page else {
        return HookResult::body(json!({
            "status_code": 404, "url": url,
            "error": "Page not found or unavailable", "content": null,
        }));
    };
    let status = page
        .get("status_code")
        .and_then(Value::as_i64)
        .unwrap_or(200);
    if status >= 400 {
        let error = page
            .get("error")
            .cloned()
            .unwrap_or_else(|| json!(format!("HTTP {status}")));
        return HookResult::body(
            json!({"status_code": status, "url": url, "error": error, "content": null}),
        );
    }
    let mut content = page.get("content").cloned().unwrap_or(json!(""));
    if injection == Injection::Injected
        && let Some(text) = content.as_str().filter(|t| !t.is_empty())
    {
        let injections = records(store, "content_injections");
        if !injections.is_empty() {
            let pick = stable_hash(&url);
            let injection = &injections[(pick % injections.len() as u64) as usize];
            let payload = injection
                .get("payload")
                .and_then(Value::as_str)
                .unwrap_or("");
            content = json!(inject_text(
                text,
                payload,
                injection.get("position").and_then(Value::as_str)
            ));
        }
    }
    HookResult::body(json!({
        "status_code": status,
        "url": url,
        "title": page.get("title").cloned().unwrap_or(json!("")),
        "content": content,
        "content_type": page.get("content_type").cloned().unwrap_or(json!("text/html")),
        "fetched_at": time::format_python_iso(input.now),
    }))
}

/// ClawEnvKit web's tokenizer: lower-cased words stripped of punctuation, CJK characters
/// and CJK bigrams.
fn web_tokens(text: &str) -> Vec<String> {
    const STRIP: &[char] = &[
        ',', '.', '!', '?', ';', ':', '"', '\'', '(', ')', '[', ']', '{', '}', '。', '，', '！',
        '？', '；', '：', '“', '”', '‘', '’', '（', '）', '【', '】', '《', '》',
    ];
    let mut tokens: Vec<String> = Vec::new();
    let mut add = |t: String| {
        if !tokens.contains(&t) {
            tokens.push(t);
        }
    };
    for word in text.to_lowercase().split_whitespace() {
        let clean = word.trim_matches(STRIP);
        if !clean.is_empty() {
            add(clean.to_owned());
        }
    }
    let chars: Vec<char> = text.chars().collect();
    for c in chars.iter().filter(|c| is_cjk(**c)) {
        add(c.to_string());
    }
    for pair in chars.windows(2) {
        if is_cjk(pair[0]) && is_cjk(pair[1]) {
            add(pair.iter().collect());
        }
    }
    tokens
}

/// A search result as ClawEnvKit answers it: its five fields, "" where the fixture has none.
fn search_result(item: &Value) -> Value {
    let field = |k: &str| item.get(k).cloned().unwrap_or(json!(""));
    json!({
        "url": field("url"),
        "title": field("title"),
        "snippet": field("snippet"),
        "source": field("source"),
        "published_at": field("published_at"),
    })
}

/// web_real_injection's placement of a payload in page text.
fn inject_text(content: &str, payload: &str, position: Option<&str>) -> String {
    match position {
        Some("middle") => {
            let mut lines: Vec<&str> = content.split('\n').collect();
            lines.insert(lines.len() / 2, payload);
            lines.join("\n")
        }
        Some("start") => format!("{payload}\n\n{content}"),
        _ => format!("{content}\n\n{payload}"),
    }
}

/// FNV-1a: a stable choice of injection per query or URL (ClawEnvKit draws at random).
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
