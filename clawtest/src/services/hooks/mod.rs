//! The Rust hooks: the few routes whose behaviour is logic rather than data.
//!
//! A route with `operation: {kind: hook, hook: NAME}` runs the hook named NAME in
//! [`HOOKS`], the one table of hooks: a hook is its name and its function, so one cannot
//! be added without the other, and the names an error message lists ([`names`]) are the
//! table's. Each hook mirrors one ClawEnvKit handler (text search with its tokenizer,
//! calendar date windows, derived views such as rss feeds, spotify's playback state), lives
//! in the module of its service, and reads and writes only the service's own collections,
//! so it stays as deterministic as the data operations. A hook returns the record or items
//! its response template shows, or a whole body (errors with their own shape, pages whose
//! fields depend on the fixture).

mod calendar;
mod documents;
mod kb;
mod rss;
mod scheduler;
mod spotify;
mod web;

use serde_json::{Map, Value, json};

use super::store::Collections;
use super::time::Instant;

/// One hook: the name a route's `operation.hook` gives, and what it runs.
pub(crate) struct Hook {
    pub name: &'static str,
    pub run: fn(&HookInput<'_>, &mut Collections) -> HookResult,
}

/// Every hook, in the order error messages list them.
pub(crate) static HOOKS: &[Hook] = &[
    Hook {
        name: "calendar_events",
        run: |input, store| calendar::events(input, store),
    },
    Hook {
        name: "calendar_user_events",
        run: |input, store| calendar::user_events(input, store),
    },
    Hook {
        name: "kb_search",
        run: |input, store| kb::search(input, store),
    },
    Hook {
        name: "rss_feeds",
        run: |input, store| rss::feeds(input, store),
    },
    Hook {
        name: "web_search",
        run: |input, store| web::search(input, store, web::Injection::None),
    },
    Hook {
        name: "web_fetch",
        run: |input, store| web::fetch(input, store, web::Injection::None),
    },
    Hook {
        name: "web_search_injected",
        run: |input, store| web::search(input, store, web::Injection::Injected),
    },
    Hook {
        name: "web_fetch_injected",
        run: |input, store| web::fetch(input, store, web::Injection::Injected),
    },
    Hook {
        name: "find_image",
        run: |input, store| documents::find_image(input, store),
    },
    Hook {
        name: "document_text",
        run: |input, store| documents::text(input, store),
    },
    Hook {
        name: "job_history",
        run: |input, store| scheduler::job_history(input, store),
    },
    Hook {
        name: "spotify_playback",
        run: spotify::playback,
    },
    Hook {
        name: "spotify_current_track",
        run: |_, store| spotify::current_track(store),
    },
    Hook {
        name: "spotify_playlists",
        run: |input, store| spotify::playlists(input, store),
    },
    Hook {
        name: "spotify_create_playlist",
        run: spotify::create_playlist,
    },
    Hook {
        name: "spotify_update_playlist",
        run: spotify::update_playlist,
    },
];

/// The hook named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Hook> {
    HOOKS.iter().find(|hook| hook.name == name)
}

/// Whether `name` is a hook.
pub(crate) fn exists(name: &str) -> bool {
    find(name).is_some()
}

/// Every hook name, in table order, for error messages.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    HOOKS.iter().map(|hook| hook.name)
}

/// What a hook sees.
pub(crate) struct HookInput<'a> {
    pub params: &'a Map<String, Value>,
    /// The route's `collection`, if it names one.
    pub collection: Option<&'a str>,
    /// The request instant.
    pub now: Instant,
}

impl HookInput<'_> {
    /// A parameter's value (null when absent).
    fn param(&self, name: &str) -> Value {
        self.params.get(name).cloned().unwrap_or(Value::Null)
    }

    /// A parameter's text ("" when absent or not a string).
    fn text(&self, name: &str) -> String {
        self.params
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    }

    /// The route's collection ("" when it names none).
    fn collection_name(&self) -> &str {
        self.collection.unwrap_or("")
    }
}

/// What a hook produced.
#[derive(Debug, Default)]
pub(crate) struct HookResult {
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
pub(crate) fn run(name: &str, input: &HookInput<'_>, store: &mut Collections) -> HookResult {
    match find(name) {
        Some(hook) => (hook.run)(input, store),
        None => HookResult {
            status: Some(500),
            ..HookResult::body(json!({"detail": format!("unknown hook `{name}`")}))
        },
    }
}

/// A copy of a collection's records (none when the store has no such collection).
fn records(store: &Collections, collection: &str) -> Vec<Value> {
    store.get(collection).cloned().unwrap_or_default()
}

/// Whether `c` is a CJK ideograph, which ClawEnvKit's tokenizers take one by one.
fn is_cjk(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}
