//! A PDF file's objects and pages: every `N G obj … endobj` found by scanning the file (so a
//! damaged or missing cross-reference table does not matter), the objects packed in object
//! streams, stream data decoded (FlateDecode, with a cap on what it may expand to), and the
//! page tree walked in order with inherited resources.

use std::collections::{HashMap, HashSet};

use super::syntax::{Dictionary, Lexer, Object, hex_digits};
use super::{Limits, PdfError};

/// An indirect object's value, with its stream data when it is a stream.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) object: Object,
    pub(super) stream: Option<Vec<u8>>,
}

/// The objects of one file, by object number.
pub(super) struct Document {
    objects: HashMap<u32, Stored>,
    root: Option<u32>,
    limits: Limits,
    /// Bytes decoded so far, against `limits.decoded_bytes`.
    decoded: std::cell::Cell<usize>,
}

/// One page: its content streams' bytes, joined, and its resources.
pub(super) struct Page {
    pub(super) content: Vec<u8>,
    pub(super) resources: Dictionary,
}

impl Document {
    pub(super) fn read(bytes: &[u8], limits: Limits) -> Result<Document, PdfError> {
        if !bytes
            .get(..1024.min(bytes.len()))
            .is_some_and(|head| head.windows(5).any(|window| window == b"%PDF-"))
        {
            return Err(PdfError::NotAPdf);
        }
        let mut document = Document {
            objects: HashMap::new(),
            root: None,
            limits,
            decoded: std::cell::Cell::new(0),
        };
        document.scan(bytes)?;
        document.unpack_object_streams()?;
        if document.objects.values().any(|stored| {
            matches!(&stored.object, Object::Dictionary(d) if d.get(b"Type").and_then(Object::name) == Some(b"XRef") && d.get(b"Encrypt").is_some())
        }) || trailer_has_encrypt(bytes)
        {
            return Err(PdfError::Encrypted);
        }
        Ok(document)
    }

    /// Every `N G obj` in file order; a later definition replaces an earlier one, as an
    /// incremental update does.
    fn scan(&mut self, bytes: &[u8]) -> Result<(), PdfError> {
        let mut from = 0;
        while let Some(found) = find(bytes, b"obj", from) {
            from = found + 3;
            let Some(number) = object_number_before(bytes, found) else {
                continue;
            };
            if bytes
                .get(from)
                .is_some_and(|byte| byte.is_ascii_alphanumeric())
            {
                continue; // `objects`, `obj2`: not the keyword
            }
            let mut lexer = Lexer::new(bytes, from);
            let Some(object) = lexer.next_object() else {
                break;
            };
            lexer.skip_blank();
            let stream = if bytes[lexer.position..].starts_with(b"stream") {
                let (data, end) = stream_data(bytes, lexer.position + 6, &object);
                from = end;
                Some(self.decode(&object, data)?)
            } else {
                from = lexer.position;
                None
            };
            if let Object::Dictionary(dictionary) = &object
                && dictionary.get(b"Type").and_then(Object::name) == Some(b"Catalog")
            {
                self.root = Some(number);
            }
            if self.objects.len() >= self.limits.objects {
                return Err(PdfError::TooLarge("objects"));
            }
            self.objects.insert(number, Stored { object, stream });
        }
        // The trailer's /Root names the catalog when there is one.
        if let Some(root) = last_trailer_root(bytes)
            && self.objects.contains_key(&root)
        {
            self.root = Some(root);
        }
        Ok(())
    }

    /// The objects of every `/Type /ObjStm` stream that no direct definition already gave.
    fn unpack_object_streams(&mut self) -> Result<(), PdfError> {
        let mut packed = Vec::new();
        for stored in self.objects.values() {
            let (Object::Dictionary(dictionary), Some(data)) = (&stored.object, &stored.stream)
            else {
                continue;
            };
            if dictionary.get(b"Type").and_then(Object::name) != Some(b"ObjStm") {
                continue;
            }
            let count = dictionary.get(b"N").and_then(Object::number).unwrap_or(0.0) as usize;
            let first = dictionary
                .get(b"First")
                .and_then(Object::number)
                .unwrap_or(0.0) as usize;
            let mut header = Lexer::new(data, 0);
            for _ in 0..count.min(self.limits.objects) {
                let (Some(Object::Integer(number)), Some(Object::Integer(offset))) =
                    (header.next_object(), header.next_object())
                else {
                    break;
                };
                let (Ok(number), Ok(offset)) = (u32::try_from(number), usize::try_from(offset))
                else {
                    break;
                };
                let Some(start) = first
                    .checked_add(offset)
                    .filter(|start| *start < data.len())
                else {
                    continue;
                };
                if let Some(object) = Lexer::new(data, start).next_object() {
                    packed.push((number, object));
                }
            }
        }
        for (number, object) in packed {
            if self.objects.len() >= self.limits.objects {
                return Err(PdfError::TooLarge("objects"));
            }
            if let Object::Dictionary(dictionary) = &object
                && dictionary.get(b"Type").and_then(Object::name) == Some(b"Catalog")
                && self.root.is_none()
            {
                self.root = Some(number);
            }
            self.objects.entry(number).or_insert(Stored {
                object,
                stream: None,
            });
        }
        if self.root.is_none() {
            self.root = self.objects.iter().find_map(|(number, stored)| {
                matches!(&stored.object, Object::Dictionary(d) if d.get(b"Type").and_then(Object::name) == Some(b"Catalog")).then_some(*number)
            });
        }
        Ok(())
    }

    /// A stream's data with its filters undone. Only FlateDecode is common in text content;
    /// a stream with another filter decodes to nothing (its text is not read).
    fn decode(&self, object: &Object, data: &[u8]) -> Result<Vec<u8>, PdfError> {
        let Object::Dictionary(dictionary) = object else {
            return Ok(data.to_vec());
        };
        let filters: Vec<&[u8]> = match dictionary.get(b"Filter") {
            None => Vec::new(),
            Some(Object::Name(name)) => vec![name.as_slice()],
            Some(Object::Array(names)) => names.iter().filter_map(Object::name).collect(),
            Some(_) => return Ok(Vec::new()),
        };
        let mut current = data.to_vec();
        for filter in filters {
            match filter {
                b"FlateDecode" | b"Fl" => {
                    let room = self.limits.decoded_bytes.saturating_sub(self.decoded.get());
                    current = inflate(&current, room)?;
                    self.decoded.set(self.decoded.get() + current.len());
                }
                b"ASCII85Decode" | b"A85" => current = ascii85(&current),
                b"ASCIIHexDecode" | b"AHx" => {
                    current = hex_digits(&current);
                }
                _ => return Ok(Vec::new()),
            }
        }
        Ok(current)
    }

    /// The object `object` names, following references (a chain of them included).
    pub(super) fn resolve<'a>(&'a self, object: &'a Object) -> &'a Object {
        let mut current = object;
        for _ in 0..16 {
            match current {
                Object::Reference(number) => match self.objects.get(number) {
                    Some(stored) => current = &stored.object,
                    None => return &Object::Null,
                },
                _ => return current,
            }
        }
        &Object::Null
    }

    /// The dictionary `object` is or names, if any.
    pub(super) fn dictionary<'a>(&'a self, object: &'a Object) -> Option<&'a Dictionary> {
        match self.resolve(object) {
            Object::Dictionary(dictionary) => Some(dictionary),
            _ => None,
        }
    }

    /// The decoded data of the stream `object` names.
    pub(super) fn stream(&self, object: &Object) -> Option<&[u8]> {
        let mut current = object;
        for _ in 0..16 {
            let Object::Reference(number) = current else {
                return None;
            };
            let stored = self.objects.get(number)?;
            if let Some(stream) = &stored.stream {
                return Some(stream);
            }
            current = &stored.object;
        }
        None
    }

    /// The pages in order.
    pub(super) fn pages(&self) -> Result<Vec<Page>, PdfError> {
        let root = self.root.ok_or(PdfError::Damaged("no document catalog"))?;
        let root = Object::Reference(root);
        let catalog = self
            .dictionary(&root)
            .ok_or(PdfError::Damaged("no document catalog"))?;
        let tree = catalog
            .get(b"Pages")
            .ok_or(PdfError::Damaged("no page tree"))?;
        let mut pages = Vec::new();
        let mut seen = HashSet::new();
        self.walk(tree, &Dictionary::default(), 0, &mut seen, &mut pages)?;
        Ok(pages)
    }

    fn walk(
        &self,
        node: &Object,
        inherited: &Dictionary,
        depth: usize,
        seen: &mut HashSet<u32>,
        pages: &mut Vec<Page>,
    ) -> Result<(), PdfError> {
        if depth > 64 {
            return Err(PdfError::Damaged("the page tree is nested too deep"));
        }
        if let Object::Reference(number) = node
            && !seen.insert(*number)
        {
            return Err(PdfError::Damaged("the page tree loops"));
        }
        let Some(dictionary) = self.dictionary(node) else {
            return Ok(());
        };
        let resources = dictionary
            .get(b"Resources")
            .and_then(|resources| self.dictionary(resources))
            .cloned()
            .unwrap_or_else(|| inherited.clone());
        if let Some(Object::Array(kids)) = dictionary.get(b"Kids").map(|kids| self.resolve(kids)) {
            for kid in kids {
                self.walk(kid, &resources, depth + 1, seen, pages)?;
            }
            return Ok(());
        }
        if pages.len() >= self.limits.pages {
            return Err(PdfError::TooLarge("pages"));
        }
        let mut content = Vec::new();
        let parts: Vec<&Object> = match dictionary.get(b"Contents").map(|c| (c, self.resolve(c))) {
            Some((_, Object::Array(parts))) => parts.iter().collect(),
            Some((reference, _)) => vec![reference],
            None => Vec::new(),
        };
        for part in parts {
            if let Some(data) = self.stream(part) {
                content.extend_from_slice(data);
                content.push(b'\n');
            }
        }
        pages.push(Page { content, resources });
        Ok(())
    }
}

/// Decompresses zlib data, failing past `limit` bytes. A stream cut short (a damaged file)
/// keeps what was decoded, as PDF readers do.
fn inflate(data: &[u8], limit: usize) -> Result<Vec<u8>, PdfError> {
    use miniz_oxide::inflate::TINFLStatus;
    match miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(data, limit) {
        Ok(out) => Ok(out),
        Err(error) if error.status == TINFLStatus::HasMoreOutput => {
            Err(PdfError::TooLarge("decompressed streams"))
        }
        Err(error) => Ok(error.output),
    }
}

/// The raw bytes of a stream starting at `start` (just after `stream`), and where its
/// `endstream` ends. A direct `/Length` is trusted when `endstream` follows it; otherwise the
/// data runs to the next `endstream`.
fn stream_data<'a>(bytes: &'a [u8], start: usize, object: &Object) -> (&'a [u8], usize) {
    let mut start = start;
    if bytes.get(start) == Some(&b'\r') {
        start += 1;
    }
    if bytes.get(start) == Some(&b'\n') {
        start += 1;
    }
    let declared = match object {
        Object::Dictionary(dictionary) => {
            dictionary.get(b"Length").and_then(|length| match length {
                Object::Integer(length) => usize::try_from(*length).ok(),
                _ => None,
            })
        }
        _ => None,
    };
    if let Some(length) = declared
        && let Some(end) = start.checked_add(length)
        && end <= bytes.len()
    {
        let rest = &bytes[end..];
        let after_blank = rest
            .iter()
            .position(|byte| !byte.is_ascii_whitespace())
            .unwrap_or(rest.len());
        if rest[after_blank..].starts_with(b"endstream") {
            return (&bytes[start..end], end + after_blank + 9);
        }
    }
    match find(bytes, b"endstream", start) {
        Some(end) => {
            let mut data_end = end;
            while data_end > start && matches!(bytes[data_end - 1], b'\r' | b'\n') {
                data_end -= 1;
            }
            (&bytes[start..data_end], end + 9)
        }
        None => (&bytes[start..], bytes.len()),
    }
}

/// ASCII85 (7.4.3): groups of five characters for four bytes, `z` for four zeros, `~>` at
/// the end.
fn ascii85(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * 4 / 5);
    let mut group = [0u8; 5];
    let mut filled = 0;
    for &byte in data {
        match byte {
            b'~' => break,
            b'z' if filled == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group[filled] = byte - b'!';
                filled += 1;
                if filled == 5 {
                    let value = group.iter().fold(0u32, |value, digit| {
                        value.wrapping_mul(85).wrapping_add(u32::from(*digit))
                    });
                    out.extend_from_slice(&value.to_be_bytes());
                    filled = 0;
                }
            }
            _ => {}
        }
    }
    if filled > 1 {
        // A last partial group is padded with `u` and gives one byte fewer than its length.
        for slot in group.iter_mut().skip(filled) {
            *slot = 84;
        }
        let value = group.iter().fold(0u32, |value, digit| {
            value.wrapping_mul(85).wrapping_add(u32::from(*digit))
        });
        out.extend_from_slice(&value.to_be_bytes()[..filled - 1]);
    }
    out
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|index| index + from)
}

/// The object number in `N G obj` ending just before `at`.
fn object_number_before(bytes: &[u8], at: usize) -> Option<u32> {
    let mut index = at;
    let skip_blank = |index: &mut usize| {
        while *index > 0 && bytes[*index - 1].is_ascii_whitespace() {
            *index -= 1;
        }
    };
    let digits = |index: &mut usize| {
        let end = *index;
        while *index > 0 && bytes[*index - 1].is_ascii_digit() {
            *index -= 1;
        }
        (*index < end).then(|| &bytes[*index..end])
    };
    let blank_end = index;
    skip_blank(&mut index);
    if index == blank_end {
        return None;
    }
    digits(&mut index)?;
    let blank_end = index;
    skip_blank(&mut index);
    if index == blank_end {
        return None;
    }
    let number = digits(&mut index)?;
    if index > 0 && !bytes[index - 1].is_ascii_whitespace() {
        return None;
    }
    std::str::from_utf8(number).ok()?.parse().ok()
}

/// `/Root N 0 R` of the last `trailer` dictionary, if the file has one.
fn last_trailer_root(bytes: &[u8]) -> Option<u32> {
    trailers(bytes)
        .rev()
        .find_map(|trailer| match trailer.get(b"Root") {
            Some(Object::Reference(number)) => Some(*number),
            _ => None,
        })
}

fn trailer_has_encrypt(bytes: &[u8]) -> bool {
    trailers(bytes).any(|trailer| trailer.get(b"Encrypt").is_some())
}

fn trailers(bytes: &[u8]) -> impl DoubleEndedIterator<Item = Dictionary> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = find(bytes, b"trailer", from) {
        from = at + 7;
        if let Some(Object::Dictionary(dictionary)) = Lexer::new(bytes, from).next_object() {
            found.push(dictionary);
        }
    }
    found.into_iter()
}
