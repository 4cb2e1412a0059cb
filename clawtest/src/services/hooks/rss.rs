//! rss's hook: the feeds derived from the articles (ClawEnvKit's `list_feeds`).

use serde_json::{Value, json};

use super::{HookInput, HookResult, records};
use crate::services::python::truthy;
use crate::services::store::Collections;

/// `rss_feeds`: one feed per article source, with its categories (first-seen order) and
/// article count; only articles of `category` when it is given.
pub(super) fn feeds(input: &HookInput<'_>, store: &Collections) -> HookResult {
    let category = input.param("category");
    let mut feeds: Vec<(String, Vec<Value>, u64)> = Vec::new();
    for a in records(store, input.collection_name()) {
        let source = a
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let cat = a.get("category").cloned().unwrap_or(json!(""));
        if truthy(&category) && cat != category {
            continue;
        }
        let index = match feeds.iter().position(|f| f.0 == source) {
            Some(i) => i,
            None => {
                feeds.push((source, Vec::new(), 0));
                feeds.len() - 1
            }
        };
        // Python builds a set, so its order is arbitrary; first-seen order is ours.
        if !feeds[index].1.contains(&cat) {
            feeds[index].1.push(cat);
        }
        feeds[index].2 += 1;
    }
    HookResult::items(
        feeds
            .into_iter()
            .map(|(source, categories, count)| {
                json!({"source": source, "categories": categories, "article_count": count})
            })
            .collect(),
    )
}
