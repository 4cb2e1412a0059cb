//! Images shown to the model: a workspace file the model reads with `read_file` that is a PNG,
//! JPEG, GIF or WebP (by its first bytes, not its name) is not handed back as text, which would
//! be noise, but as an image content part of the next user message, in the chat completions
//! wire format (`image_url` with a `data:` URL), as a vision model reads a picture. The tool
//! result says so. Its size is capped: the whole file goes into the request.

use serde_json::{Value, json};

/// The largest image shown (the providers take a few MiB per image).
pub const IMAGE_LIMIT: usize = 4 * 1024 * 1024;

/// An image file of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The path the model asked for, as it wrote it.
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'static str,
    pub bytes: Vec<u8>,
}

impl Image {
    /// The tool result the model gets for the read.
    pub fn tool_result(&self) -> String {
        format!(
            "{} is an image ({}, {} bytes): it is shown to you in the next message.",
            self.path,
            self.media_type,
            self.bytes.len()
        )
    }

    /// The content parts of the user message that shows it.
    pub fn parts(&self) -> [Value; 2] {
        [
            json!({"type": "text", "text": format!("The image {}:", self.path)}),
            json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", self.media_type, base64(&self.bytes))}}),
        ]
    }
}

/// The image type of a file that starts with `head`, if it is one.
pub fn media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Standard base64 with padding (RFC 4648), what a `data:` URL holds.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk.iter().enumerate().fold(0u32, |group, (index, byte)| {
            group | u32::from(*byte) << (16 - 8 * index)
        });
        for index in 0..4 {
            if index <= chunk.len() {
                let six = (group >> (18 - 6 * index)) & 0x3F;
                text.push(char::from(ALPHABET[six as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648s_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64(&[0xFF, 0xFE, 0xFD]), "//79");
    }

    #[test]
    fn images_are_known_by_their_first_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(media_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a"), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"a,b\n1,2\n"), None);
        assert_eq!(media_type(b"%PDF-1.4"), None);
    }
}
