//! Binary parts of recorded calls (an image shown to the model) kept out of the cassette's
//! YAML: a base64 payload of [`MIN_CHARS`] characters or more, in a `data:` URL (OpenAI's
//! `image_url`) or in a `{"type": "base64", "media_type", "data"}` source (Anthropic's image
//! and document blocks), is written once, by the SHA-256 of its bytes, to `blobs/` beside the
//! cassette, and the YAML holds `{{blob:<sha256>.<extension>}}` in its place. Loading puts the
//! same base64 text back, so a replayed request matches byte for byte; a blob whose bytes no
//! longer hash to its name, a name that is not a hash, or a link is refused, since a cassette
//! comes from a pull request.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The shortest payload kept as a blob: a smaller one reads as well inline.
pub(super) const MIN_CHARS: usize = 256;

/// The folder beside the cassettes that holds the blobs.
pub(super) const FOLDER: &str = "blobs";

/// The largest blob read back (the providers take a few MiB per image).
const MAX_BYTES: u64 = 32 * 1024 * 1024;

const OPEN: &str = "{{blob:";
const CLOSE: &str = "}}";

/// Replaces each large base64 payload under `value` by its placeholder; the bytes, by blob
/// name, are added to `blobs`.
pub(super) fn stow(value: &mut Value, blobs: &mut BTreeMap<String, Vec<u8>>) {
    match value {
        Value::String(text) => {
            if let Some((media_type, payload)) = data_url(text)
                && let Some(name) = keep(media_type, payload, blobs)
            {
                let prefix = text.len() - payload.len();
                text.replace_range(prefix.., &placeholder(&name));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| stow(item, blobs)),
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("base64") {
                let media_type = map
                    .get("media_type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if let Some(Value::String(data)) = map.get_mut("data")
                    && let Some(name) = keep(&media_type, data, blobs)
                {
                    *data = placeholder(&name);
                }
            }
            map.values_mut().for_each(|item| stow(item, blobs));
        }
        _ => {}
    }
}

/// Puts back each placeholder under `value` from the blobs in `folder` (the cassettes'
/// folder): the error names the blob and what is wrong with it.
pub(super) fn restore(value: &mut Value, folder: &Path) -> Result<(), String> {
    match value {
        Value::String(text) if text.contains(OPEN) => {
            let mut restored = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(start) = rest.find(OPEN) {
                restored.push_str(&rest[..start]);
                let after = &rest[start + OPEN.len()..];
                let end = after
                    .find(CLOSE)
                    .ok_or_else(|| format!("`{OPEN}` without its closing `{CLOSE}`"))?;
                restored.push_str(&STANDARD.encode(read(folder, &after[..end])?));
                rest = &after[end + CLOSE.len()..];
            }
            restored.push_str(rest);
            *text = restored;
            Ok(())
        }
        Value::Array(items) => items.iter_mut().try_for_each(|item| restore(item, folder)),
        Value::Object(map) => map.values_mut().try_for_each(|item| restore(item, folder)),
        _ => Ok(()),
    }
}

/// Writes each blob not yet in `folder`'s blob folder (a blob is named by its content: one
/// that is there already holds these bytes).
pub(super) fn write(folder: &Path, blobs: &BTreeMap<String, Vec<u8>>) -> std::io::Result<()> {
    for (name, bytes) in blobs {
        let path = folder.join(FOLDER).join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_file()) {
            continue;
        }
        crate::persist::write(&path, bytes, crate::persist::Durability::Recording)?;
    }
    Ok(())
}

/// `(media type, base64 payload)` of a `data:<type>;base64,<payload>` URL.
fn data_url(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("data:")?;
    let (media_type, payload) = rest.split_once(";base64,")?;
    (!media_type.contains(',')).then_some((media_type, payload))
}

/// The blob name of `payload` when it is kept (long enough, and base64 that decodes).
fn keep(media_type: &str, payload: &str, blobs: &mut BTreeMap<String, Vec<u8>>) -> Option<String> {
    if payload.len() < MIN_CHARS {
        return None;
    }
    let bytes = STANDARD.decode(payload).ok()?;
    // Only a payload that encodes back to itself: the replay must put back the same text.
    if STANDARD.encode(&bytes) != payload {
        return None;
    }
    let name = format!("{}.{}", hex(&Sha256::digest(&bytes)), extension(media_type));
    blobs.insert(name.clone(), bytes);
    Some(name)
}

fn placeholder(name: &str) -> String {
    format!("{OPEN}{name}{CLOSE}")
}

fn extension(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "application/pdf" => "pdf",
        _ => "bin",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of blob `name`, checked: a hash and an extension, a regular file (not a link),
/// at most [`MAX_BYTES`], whose SHA-256 is its name.
fn read(folder: &Path, name: &str) -> Result<Vec<u8>, String> {
    let (hash, extension) = name.split_once('.').unwrap_or((name, ""));
    let well_formed = hash.len() == 64
        && hash
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        && !extension.is_empty()
        && extension.len() <= 5
        && extension.bytes().all(|byte| byte.is_ascii_alphanumeric());
    if !well_formed {
        return Err(format!(
            "`{OPEN}{name}{CLOSE}` does not name a blob (`<sha256>.<extension>`)"
        ));
    }
    let path = folder.join(FOLDER).join(name);
    let bytes = crate::task::read::read_regular(&path, MAX_BYTES)
        .map_err(|error| format!("blob {}: {error}", path.display()))?;
    if hex(&Sha256::digest(&bytes)) != hash {
        return Err(format!(
            "blob {} does not hash to its name: it was changed since it was recorded",
            path.display()
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn png(size: usize) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend((0..size).map(|index| (index % 251) as u8));
        bytes
    }

    /// Both wire formats' images are stowed once by hash and put back as the same text; a
    /// short payload and any other text stay inline.
    #[test]
    fn large_payloads_go_to_blobs_once_and_come_back_byte_for_byte() {
        let image = STANDARD.encode(png(400));
        let original = json!({"messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{image}")}}]},
            {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}]},
            {"role": "user", "content": "data:image/png;base64,aGk="},
        ]});
        let mut stowed = original.clone();
        let mut blobs = BTreeMap::new();
        stow(&mut stowed, &mut blobs);
        assert_eq!(blobs.len(), 1);
        let name = blobs.keys().next().unwrap().clone();
        assert!(name.ends_with(".png"), "{name}");
        assert_eq!(
            stowed["messages"][0]["content"][0]["image_url"]["url"],
            format!("data:image/png;base64,{{{{blob:{name}}}}}")
        );
        assert_eq!(
            stowed["messages"][1]["content"][0]["source"]["data"],
            format!("{{{{blob:{name}}}}}")
        );
        assert_eq!(stowed["messages"][2], original["messages"][2]);

        let folder = tempfile::tempdir().unwrap();
        write(folder.path(), &blobs).unwrap();
        let mut restored = stowed.clone();
        restore(&mut restored, folder.path()).unwrap();
        assert_eq!(restored, original);
    }

    /// A cassette from a pull request cannot make the replay read another file: a name that
    /// is not a hash, a link, or a blob whose bytes changed is an error naming it.
    #[test]
    fn a_blob_that_is_not_what_its_name_says_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        let mut blobs = BTreeMap::new();
        let mut value = json!(format!(
            "data:image/png;base64,{}",
            STANDARD.encode(png(400))
        ));
        stow(&mut value, &mut blobs);
        write(folder.path(), &blobs).unwrap();
        let name = blobs.keys().next().unwrap();

        let mut escape = json!("{{blob:../../etc/passwd}}");
        let error = restore(&mut escape, folder.path()).unwrap_err();
        assert!(error.contains("does not name a blob"), "{error}");

        std::fs::write(folder.path().join(FOLDER).join(name), b"changed").unwrap();
        let error = restore(&mut value.clone(), folder.path()).unwrap_err();
        assert!(error.contains("does not hash to its name"), "{error}");

        std::fs::remove_file(folder.path().join(FOLDER).join(name)).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", folder.path().join(FOLDER).join(name)).unwrap();
        assert!(restore(&mut value, folder.path()).is_err());
    }
}
