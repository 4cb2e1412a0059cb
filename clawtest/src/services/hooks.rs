//! The Rust hooks: the few routes whose behaviour is logic rather than data.
//!
//! A route with `operation: {kind: hook, hook: NAME}` runs the hook named here. Each hook
//! mirrors one ClawEnvKit handler (text search with its tokenizer, calendar date windows,
//! derived views such as rss feeds, spotify's playback state) and reads and writes only
//! the service's own collections, so it stays as deterministic as the data operations. A
//! hook returns the record or items its response template shows, or a whole body (errors
//! with their own shape, pages whose fields depend on the fixture).

use serde_json::{Map, Value, json};

use super::engine::{Collections, truthy};
use super::time::{self, DAY, Instant};

/// Every hook name, for error messages.
pub const NAMES: &[&str] = &[
    "calendar_events",
    "calendar_user_events",
    "kb_search",
    "rss_feeds",
    "web_search",
    "web_fetch",
    "web_search_injected",
    "web_fetch_injected",
    "find_image",
    "document_text",
    "job_history",
    "spotify_playback",
    "spotify_current_track",
    "spotify_playlists",
    "spotify_create_playlist",
    "spotify_update_playlist",
];

/// Whether `name` is a hook.
pub fn exists(name: &str) -> bool {
    NAMES.contains(&name)
}

/// What a hook sees.
pub struct HookInput<'a> {
    pub params: &'a Map<String, Value>,
    /// The route's `collection`, if it names one.
    pub collection: Option<&'a str>,
    /// The request instant.
    pub now: Instant,
}

/// What a hook produced.
#[derive(Debug, Default)]
pub struct HookResult {
    /// false → the route's `not_found` template.
    pub found: bool,
    /// A status other than 200.
    pub status: Option<u16>,
    pub record: Option<Value>,
    pub items: Option<Vec<Value>>,
    /// The whole response body, bypassing the templates.
    pub body: Option<Value>,
}

impl HookResult {
    fn items(items: Vec<Value>) -> Self {
        HookResult {
            found: true,
            items: Some(items),
            ..Self::default()
        }
    }
    fn record(record: Value) -> Self {
        HookResult {
            found: true,
            record: Some(record),
            ..Self::default()
        }
    }
    fn body(body: Value) -> Self {
        HookResult {
            found: true,
            body: Some(body),
            ..Self::default()
        }
    }
    fn not_found() -> Self {
        Self::default()
    }
}

/// Runs hook `name`. An unknown name (prevented by [`super::ServiceDescription::check`])
/// answers 500 rather than panicking.
pub fn run(name: &str, input: &HookInput<'_>, store: &mut Collections) -> HookResult {
    let p = |k: &str| input.params.get(k).cloned().unwrap_or(Value::Null);
    let s = |k: &str| {
        input
            .params
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let collection = input.collection.unwrap_or("");
    let records = |store: &Collections, c: &str| store.get(c).cloned().unwrap_or_default();
    match name {
        "calendar_events" | "calendar_user_events" => {
            let date = s("date");
            let Some(start) = parse_day(&date) else {
                return HookResult::body(json!({"error": format!("Invalid date format: {date}")}));
            };
            let days = if name == "calendar_events" {
                p("days").as_i64().unwrap_or(1)
            } else {
                1
            };
            let end = start + i128::from(days) * DAY;
            let user = s("user");
            let mut events: Vec<Value> = records(store, collection)
                .into_iter()
                .filter(|e| {
                    let at = e
                        .get("start_time")
                        .and_then(Value::as_str)
                        .and_then(time::parse);
                    at.is_some_and(|at| start <= at && at < end)
                })
                .filter(|e| {
                    if name == "calendar_events" {
                        return true;
                    }
                    let attendees = e.get("attendees").and_then(Value::as_array);
                    attendees.is_some_and(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .any(|a| a == user || a.contains(&user))
                    })
                })
                .collect();
            events.sort_by(|a, b| {
                let key = |e: &Value| {
                    e.get("start_time")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                key(a).cmp(&key(b))
            });
            HookResult::items(events)
        }
        "kb_search" => {
            let query = kb_tokens(&s("query"));
            let category = p("category");
            let mut found = Vec::new();
            for article in records(store, collection) {
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
                let searchable =
                    format!("{} {} {}", field("title"), tags.join(" "), field("content"));
                if kb_tokens(&searchable).iter().any(|t| query.contains(t)) {
                    let mut result = article.clone();
                    let snippet: String = field("content").chars().take(150).collect();
                    if let Value::Object(o) = &mut result {
                        o.insert("snippet".into(), json!(format!("{snippet}...")));
                    }
                    found.push(result);
                }
            }
            python_truncate(&mut found, p("max_results").as_i64().unwrap_or(5));
            HookResult::items(found)
        }
        "rss_feeds" => {
            let category = p("category");
            let mut feeds: Vec<(String, Vec<Value>, u64)> = Vec::new();
            for a in records(store, collection) {
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
        "web_search" | "web_search_injected" => {
            let query = web_tokens(&s("query"));
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
            python_truncate(&mut results, p("max_results").as_i64().unwrap_or(10));
            if name == "web_search_injected" && !results.is_empty() {
                let injections = records(store, "search_injections");
                if !injections.is_empty() {
                    let pick = stable_hash(&s("query"));
                    let injection = &injections[(pick % injections.len() as u64) as usize];
                    let at = 1 + (pick / 7) as usize % results.len();
                    results.insert(at.min(results.len()), search_result(injection));
                }
            }
            HookResult::items(results)
        }
        "web_fetch" | "web_fetch_injected" => {
            let url = s("url");
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
            if name == "web_fetch_injected"
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
        "find_image" => {
            let path = s("image_path");
            let items = records(store, collection);
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
                        let item_path =
                            item.get("image_path").and_then(Value::as_str).unwrap_or("");
                        item_path == path
                            || name_of(item_path) == name_of(&path)
                            || stem_of(item_path) == stem_of(&path)
                    })
                })
                .flatten();
            // ClawEnvKit answers with the first item when nothing matches.
            HookResult::record(found.or(items.first()).cloned().unwrap_or(json!({})))
        }
        "document_text" => {
            let raw = s("path");
            let wanted = raw
                .trim_start_matches("/workspace/")
                .trim_start_matches("./");
            let document = records(store, collection).into_iter().find(|d| {
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
            let max = p("max_pages")
                .as_i64()
                .filter(|n| *n != 0)
                .unwrap_or(pages.len() as i64);
            let limit = max.clamp(i64::MIN, pages.len() as i64);
            let mut shown = pages.clone();
            python_truncate(&mut shown, limit);
            HookResult::body(json!({
                "path": wanted,
                "page_count": pages.len(),
                "pages_returned": limit,
                "text": shown.join("\n\n").trim(),
            }))
        }
        "job_history" => {
            let id = p("job_id");
            let Some(job) = records(store, collection)
                .into_iter()
                .find(|j| j.get("job_id").unwrap_or(&json!("")) == &id)
            else {
                return HookResult::not_found();
            };
            let history = job
                .get("execution_history")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let total = history.len();
            let mut limited = history;
            python_truncate(&mut limited, p("limit").as_i64().unwrap_or(10));
            HookResult::body(json!({"job_id": id, "history": limited, "total": total}))
        }
        "spotify_current_track" => HookResult::body(json!({"playback": playback(store)})),
        "spotify_playback" => spotify_playback(input, store),
        "spotify_playlists" => {
            let owner = p("owner");
            let tracks = records(store, "tracks");
            let playlists = records(store, "playlists")
                .into_iter()
                .filter(|pl| !truthy(&owner) || pl.get("owner").unwrap_or(&json!("")) == &owner)
                .map(|pl| {
                    let ids = pl
                        .get("track_ids")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let list: Vec<Value> = tracks
                        .iter()
                        .filter(|t| t.get("id").is_some_and(|id| ids.contains(id)))
                        .cloned()
                        .collect();
                    let mut enriched = pl.clone();
                    // `{**pl, "tracks": …, "track_count": …}`: in that key order.
                    if let Value::Object(o) = &mut enriched {
                        let count = list.len();
                        o.insert("tracks".into(), Value::Array(list));
                        o.insert("track_count".into(), json!(count));
                    }
                    enriched
                })
                .collect();
            HookResult::items(playlists)
        }
        "spotify_create_playlist" => {
            let valid = valid_track_ids(store, &p("track_ids"));
            let playlists = store.entry("playlists".into()).or_default();
            // ClawEnvKit draws a uuid; clawtest numbers playlists so a trial is reproducible.
            let id = format!("p{:08}", playlists.len() + 1);
            let playlist = json!({
                "id": id,
                "name": p("name"),
                "description": if truthy(&p("description")) { p("description") } else { json!("") },
                "track_ids": valid,
                "owner": if truthy(&p("owner")) { p("owner") } else { json!("user1") },
            });
            playlists.push(playlist.clone());
            HookResult::record(playlist)
        }
        "spotify_update_playlist" => {
            let id = p("playlist_id");
            let valid =
                (!p("track_ids").is_null()).then(|| valid_track_ids(store, &p("track_ids")));
            let playlists = store.entry("playlists".into()).or_default();
            let Some(playlist) = playlists.iter_mut().find(|pl| pl.get("id") == Some(&id)) else {
                return HookResult::not_found();
            };
            if let Value::Object(o) = playlist {
                for field in ["name", "description"] {
                    if !p(field).is_null() {
                        o.insert(field.into(), p(field));
                    }
                }
                if let Some(valid) = valid {
                    o.insert("track_ids".into(), valid);
                }
            }
            HookResult::record(playlist.clone())
        }
        _ => HookResult {
            status: Some(500),
            ..HookResult::body(json!({"detail": format!("unknown hook `{name}`")}))
        },
    }
}

/// Python's `items[:n]`.
fn python_truncate<T>(items: &mut Vec<T>, n: i64) {
    let len = items.len() as i64;
    let end = if n < 0 { (len + n).max(0) } else { n.min(len) };
    items.truncate(end as usize);
}

/// `datetime.strptime(text, "%Y-%m-%d")` at midnight UTC.
fn parse_day(text: &str) -> Option<Instant> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || y.len() != 4
        || m.is_empty()
        || m.len() > 2
        || d.is_empty()
        || d.len() > 2
    {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(y) && digits(m) && digits(d)) {
        return None;
    }
    time::parse(&format!("{y}-{m:0>2}-{d:0>2}"))
}

fn is_cjk(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
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

fn playback(store: &Collections) -> Value {
    store
        .get("playback")
        .and_then(|p| p.first())
        .cloned()
        .unwrap_or_else(|| json!({"is_playing": false, "current_track": null, "volume": 50}))
}

fn valid_track_ids(store: &Collections, ids: &Value) -> Value {
    let tracks = store.get("tracks").map(Vec::as_slice).unwrap_or(&[]);
    Value::Array(
        ids.as_array()
            .into_iter()
            .flatten()
            .filter(|id| tracks.iter().any(|t| t.get("id") == Some(*id)))
            .cloned()
            .collect(),
    )
}

fn spotify_playback(input: &HookInput<'_>, store: &mut Collections) -> HookResult {
    let p = |k: &str| input.params.get(k).cloned().unwrap_or(Value::Null);
    let action_raw = p("action").as_str().unwrap_or("").to_owned();
    let tracks = store.get("tracks").cloned().unwrap_or_default();
    let mut state = playback(store);
    let current_id = |state: &Value| {
        state
            .get("current_track")
            .and_then(|t| t.get("id"))
            .cloned()
    };
    let position_of = |id: &Option<Value>| {
        id.as_ref()
            .and_then(|id| tracks.iter().position(|t| t.get("id") == Some(id)))
    };
    match action_raw.to_lowercase().as_str() {
        "play" => {
            let track_id = p("track_id");
            if truthy(&track_id) {
                let Some(track) = tracks.iter().find(|t| t.get("id") == Some(&track_id)) else {
                    let shown = track_id.as_str().unwrap_or("").to_owned();
                    return HookResult::body(
                        json!({"error": format!("Track '{shown}' not found")}),
                    );
                };
                state["current_track"] = track.clone();
            }
            if state["current_track"].is_null()
                && let Some(first) = tracks.first()
            {
                state["current_track"] = first.clone();
            }
            state["is_playing"] = json!(true);
        }
        "pause" => state["is_playing"] = json!(false),
        "next" | "previous" => {
            if !tracks.is_empty() {
                let len = tracks.len() as i64;
                if state["current_track"].is_null() {
                    if action_raw.eq_ignore_ascii_case("next") {
                        state["current_track"] = tracks[0].clone();
                        state["is_playing"] = json!(true);
                    }
                } else {
                    let found = position_of(&current_id(&state));
                    let index = if action_raw.eq_ignore_ascii_case("next") {
                        (found.map_or(-1, |i| i as i64) + 1).rem_euclid(len)
                    } else {
                        (found.map_or(0, |i| i as i64) - 1).rem_euclid(len)
                    };
                    state["current_track"] = tracks[index as usize].clone();
                    state["is_playing"] = json!(true);
                }
            }
        }
        "set_volume" => {
            if let Some(volume) = p("volume").as_i64() {
                state["volume"] = json!(volume.clamp(0, 100));
            }
        }
        _ => {
            return HookResult::body(json!({
                "error": format!("Unknown action '{action_raw}'. Use play, pause, next, previous, set_volume")
            }));
        }
    }
    let slot = store.entry("playback".into()).or_default();
    match slot.first_mut() {
        Some(first) => *first = state.clone(),
        None => slot.push(state.clone()),
    }
    HookResult::body(json!({"playback": state}))
}
