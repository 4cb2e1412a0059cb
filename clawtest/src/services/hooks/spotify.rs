//! spotify's hooks: the playback state (one record, changed by play, pause, next, previous
//! and set_volume) and playlists with their tracks.

use serde_json::{Value, json};

use super::{HookInput, HookResult, records};
use crate::services::python::truthy;
use crate::services::store::Collections;

/// `spotify_current_track`: the playback state.
pub(super) fn current_track(store: &Collections) -> HookResult {
    HookResult::body(json!({"playback": state(store)}))
}

/// `spotify_playlists`: the playlists (of `owner`, when given), each with its tracks.
pub(super) fn playlists(input: &HookInput<'_>, store: &Collections) -> HookResult {
    let owner = input.param("owner");
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

/// `spotify_create_playlist`: a new playlist of the given tracks that exist.
pub(super) fn create_playlist(input: &HookInput<'_>, store: &mut Collections) -> HookResult {
    let valid = valid_track_ids(store, &input.param("track_ids"));
    let playlists = store.entry("playlists".into()).or_default();
    // ClawEnvKit draws a uuid; clawtest numbers playlists so a trial is reproducible.
    let id = format!("p{:08}", playlists.len() + 1);
    let playlist = json!({
        "id": id,
        "name": input.param("name"),
        "description": if truthy(&input.param("description")) { input.param("description") } else { json!("") },
        "track_ids": valid,
        "owner": if truthy(&input.param("owner")) { input.param("owner") } else { json!("user1") },
    });
    playlists.push(playlist.clone());
    HookResult::record(playlist)
}

/// `spotify_update_playlist`: a playlist's name, description or tracks changed.
pub(super) fn update_playlist(input: &HookInput<'_>, store: &mut Collections) -> HookResult {
    let id = input.param("playlist_id");
    let valid = (!input.param("track_ids").is_null())
        .then(|| valid_track_ids(store, &input.param("track_ids")));
    let playlists = store.entry("playlists".into()).or_default();
    let Some(playlist) = playlists.iter_mut().find(|pl| pl.get("id") == Some(&id)) else {
        return HookResult::not_found();
    };
    if let Value::Object(o) = playlist {
        for field in ["name", "description"] {
            if !input.param(field).is_null() {
                o.insert(field.into(), input.param(field));
            }
        }
        if let Some(valid) = valid {
            o.insert("track_ids".into(), valid);
        }
    }
    HookResult::record(playlist.clone())
}

/// The playback state: the fixture's, else nothing playing at volume 50.
fn state(store: &Collections) -> Value {
    store
        .get("playback")
        .and_then(|p| p.first())
        .cloned()
        .unwrap_or_else(|| json!({"is_playing": false, "current_track": null, "volume": 50}))
}

/// The ids among `ids` that name a track.
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

/// `spotify_playback`: play (a track, or resume), pause, next, previous or set_volume;
/// answers the new state.
pub(super) fn playback(input: &HookInput<'_>, store: &mut Collections) -> HookResult {
    let action_raw = input.param("action").as_str().unwrap_or("").to_owned();
    let tracks = store.get("tracks").cloned().unwrap_or_default();
    let mut state = state(store);
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
            let track_id = input.param("track_id");
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
            if let Some(volume) = input.param("volume").as_i64() {
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
