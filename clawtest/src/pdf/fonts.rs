//! A page's fonts as far as text needs them: how a shown string's bytes become characters
//! (a `ToUnicode` CMap, else the simple font's encoding with its `/Differences`) and how wide
//! each glyph is (for the word gaps the text reader turns into spaces).

use std::collections::HashMap;

use super::document::Document;
use super::syntax::{Dictionary, Lexer, Object};

/// A `ToUnicode` map or a range in it larger than this is cut: a real font maps at most a
/// few thousand codes, and a hostile range could ask for four billion.
const MAX_MAPPINGS: usize = 1 << 16;

/// One font of a page's resources.
pub(super) struct Font {
    /// Bytes per character code: 2 for a composite (Type0) font, else 1.
    code_bytes: usize,
    to_unicode: Option<HashMap<u32, String>>,
    /// A simple font's code → character.
    encoding: [char; 256],
    widths: HashMap<u32, f64>,
    default_width: f64,
    /// The width of a space, in thousandths of the text size.
    pub(super) space_width: f64,
}

impl Font {
    /// The font readers assume when a page shows text before choosing one.
    pub(super) fn fallback() -> Font {
        Font {
            code_bytes: 1,
            to_unicode: None,
            encoding: win_ansi(),
            widths: HashMap::new(),
            default_width: 500.0,
            space_width: 250.0,
        }
    }

    pub(super) fn read(document: &Document, dictionary: &Dictionary) -> Font {
        let subtype = dictionary.get(b"Subtype").and_then(Object::name);
        let composite = subtype == Some(b"Type0");
        let to_unicode = dictionary
            .get(b"ToUnicode")
            .and_then(|stream| document.stream(stream))
            .map(parse_cmap);
        let mut font = Font {
            code_bytes: if composite { 2 } else { 1 },
            to_unicode,
            encoding: simple_encoding(document, dictionary),
            widths: HashMap::new(),
            default_width: 0.0,
            space_width: 0.0,
        };
        if composite {
            font.composite_widths(document, dictionary);
        } else {
            font.simple_widths(document, dictionary);
        }
        let space_code = if composite { None } else { Some(0x20) };
        let space = space_code
            .and_then(|code| font.widths.get(&code).copied())
            .filter(|width| *width > 0.0);
        font.space_width = space.unwrap_or(if font.default_width > 0.0 {
            font.default_width / 2.0
        } else {
            250.0
        });
        if font.default_width <= 0.0 {
            font.default_width = font.space_width * 2.0;
        }
        font
    }

    fn simple_widths(&mut self, document: &Document, dictionary: &Dictionary) {
        let first = dictionary
            .get(b"FirstChar")
            .and_then(|first| document.resolve(first).number())
            .unwrap_or(0.0);
        if let Some(Object::Array(widths)) = dictionary.get(b"Widths").map(|w| document.resolve(w))
        {
            for (index, width) in widths.iter().enumerate().take(256) {
                if let Some(width) = document.resolve(width).number() {
                    self.widths.insert(first as u32 + index as u32, width);
                }
            }
        }
        let base = dictionary
            .get(b"BaseFont")
            .and_then(Object::name)
            .unwrap_or_default();
        // The standard 14 fonts come without widths: their metrics are known to readers.
        // Courier is monospaced; for the others the averages of their Latin glyphs stand in.
        if self.widths.is_empty() {
            let (space, average) = if base.starts_with(b"Courier") {
                (600.0, 600.0)
            } else if base.starts_with(b"Times") {
                (250.0, 500.0)
            } else {
                (278.0, 556.0)
            };
            self.widths.insert(0x20, space);
            self.default_width = average;
        }
    }

    fn composite_widths(&mut self, document: &Document, dictionary: &Dictionary) {
        let Some(Object::Array(descendants)) = dictionary
            .get(b"DescendantFonts")
            .map(|d| document.resolve(d))
        else {
            return;
        };
        let Some(descendant) = descendants.first().and_then(|d| document.dictionary(d)) else {
            return;
        };
        self.default_width = descendant
            .get(b"DW")
            .and_then(|width| document.resolve(width).number())
            .unwrap_or(1000.0);
        let Some(Object::Array(entries)) = descendant.get(b"W").map(|w| document.resolve(w)) else {
            return;
        };
        let mut index = 0;
        while index < entries.len() && self.widths.len() < MAX_MAPPINGS {
            let Some(first) = document.resolve(&entries[index]).number() else {
                break;
            };
            match entries.get(index + 1).map(|next| document.resolve(next)) {
                Some(Object::Array(widths)) => {
                    for (offset, width) in widths.iter().enumerate().take(MAX_MAPPINGS) {
                        if let Some(width) = document.resolve(width).number() {
                            self.widths.insert(first as u32 + offset as u32, width);
                        }
                    }
                    index += 2;
                }
                Some(last) => {
                    let (Some(last), Some(width)) = (
                        last.number(),
                        entries
                            .get(index + 2)
                            .and_then(|width| document.resolve(width).number()),
                    ) else {
                        break;
                    };
                    let span = (last - first).clamp(0.0, MAX_MAPPINGS as f64) as u32;
                    for code in first as u32..=(first as u32).saturating_add(span) {
                        self.widths.insert(code, width);
                    }
                    index += 3;
                }
                None => break,
            }
        }
    }

    /// The characters a shown string's bytes stand for, and the sum of their widths in
    /// thousandths of the text size.
    pub(super) fn decode(&self, bytes: &[u8]) -> (String, f64) {
        let mut text = String::new();
        let mut width = 0.0;
        for code in bytes.chunks(self.code_bytes) {
            let code = code
                .iter()
                .fold(0u32, |value, byte| value << 8 | u32::from(*byte));
            let mapped = self.to_unicode.as_ref().and_then(|map| map.get(&code));
            match mapped {
                Some(characters) => text.push_str(characters),
                None if self.code_bytes == 1 => text.push(self.encoding[code as usize & 0xff]),
                // A composite font's code without a mapping is a glyph id: no text.
                None => {}
            }
            width += self
                .widths
                .get(&code)
                .copied()
                .unwrap_or(self.default_width);
        }
        (text, width)
    }
}

/// The encoding of a simple font: its base encoding with `/Differences` applied.
fn simple_encoding(document: &Document, dictionary: &Dictionary) -> [char; 256] {
    let mut table = win_ansi();
    let encoding = dictionary.get(b"Encoding").map(|e| document.resolve(e));
    let (base, differences) = match encoding {
        Some(Object::Name(name)) => (Some(name.as_slice()), None),
        Some(Object::Dictionary(encoding)) => (
            encoding.get(b"BaseEncoding").and_then(Object::name),
            encoding.get(b"Differences").map(|d| document.resolve(d)),
        ),
        _ => (None, None),
    };
    if base == Some(b"StandardEncoding") {
        table[0x27] = '\u{2019}';
        table[0x60] = '\u{2018}';
    }
    if let Some(Object::Array(differences)) = differences {
        let mut code = 0usize;
        for entry in differences {
            match entry {
                Object::Integer(start) => code = (*start).clamp(0, 256) as usize,
                Object::Name(glyph) => {
                    if let (Some(slot), Some(character)) =
                        (table.get_mut(code), glyph_character(glyph))
                    {
                        *slot = character;
                    }
                    code += 1;
                }
                _ => {}
            }
        }
    }
    table
}

/// WinAnsiEncoding (Windows-1252), which is also what readers use when a simple font names
/// no encoding.
fn win_ansi() -> [char; 256] {
    const HIGH: [u16; 32] = [
        0x20AC, 0xFFFD, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0xFFFD, 0x017D, 0xFFFD, 0xFFFD, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
        0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0xFFFD, 0x017E, 0x0178,
    ];
    let mut table = ['\u{fffd}'; 256];
    for (code, slot) in table.iter_mut().enumerate() {
        *slot = match code {
            0x80..=0x9f => char::from_u32(u32::from(HIGH[code - 0x80])).unwrap_or('\u{fffd}'),
            _ => char::from(code as u8),
        };
    }
    table
}

/// The character of a glyph name: `uniXXXX`, a one-letter name, or a common Latin name.
fn glyph_character(glyph: &[u8]) -> Option<char> {
    let name = std::str::from_utf8(glyph).ok()?;
    if let Some(hex) = name.strip_prefix("uni").filter(|hex| hex.len() == 4) {
        return u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
    }
    let mut characters = name.chars();
    if let (Some(only), None) = (characters.next(), characters.next()) {
        return Some(only);
    }
    const NAMES: &[(&str, char)] = &[
        ("space", ' '),
        ("exclam", '!'),
        ("quotedbl", '"'),
        ("numbersign", '#'),
        ("dollar", '$'),
        ("percent", '%'),
        ("ampersand", '&'),
        ("quotesingle", '\''),
        ("parenleft", '('),
        ("parenright", ')'),
        ("asterisk", '*'),
        ("plus", '+'),
        ("comma", ','),
        ("hyphen", '-'),
        ("period", '.'),
        ("slash", '/'),
        ("zero", '0'),
        ("one", '1'),
        ("two", '2'),
        ("three", '3'),
        ("four", '4'),
        ("five", '5'),
        ("six", '6'),
        ("seven", '7'),
        ("eight", '8'),
        ("nine", '9'),
        ("colon", ':'),
        ("semicolon", ';'),
        ("less", '<'),
        ("equal", '='),
        ("greater", '>'),
        ("question", '?'),
        ("at", '@'),
        ("bracketleft", '['),
        ("backslash", '\\'),
        ("bracketright", ']'),
        ("underscore", '_'),
        ("braceleft", '{'),
        ("bar", '|'),
        ("braceright", '}'),
        ("quoteleft", '\u{2018}'),
        ("quoteright", '\u{2019}'),
        ("quotedblleft", '\u{201c}'),
        ("quotedblright", '\u{201d}'),
        ("endash", '\u{2013}'),
        ("emdash", '\u{2014}'),
        ("bullet", '\u{2022}'),
        ("Euro", '\u{20ac}'),
        ("fi", '\u{fb01}'),
        ("fl", '\u{fb02}'),
    ];
    NAMES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, character)| *character)
}

/// A `ToUnicode` CMap's `bfchar` and `bfrange` entries: code → text.
fn parse_cmap(data: &[u8]) -> HashMap<u32, String> {
    let mut map = HashMap::new();
    let mut lexer = Lexer::new(data, 0);
    let mut pending: Vec<Object> = Vec::new();
    let mut section: Option<&'static [u8]> = None;
    while let Some(object) = lexer.next_object() {
        if map.len() >= MAX_MAPPINGS {
            break;
        }
        match object {
            Object::Keyword(keyword) => match keyword.as_slice() {
                b"beginbfchar" => section = Some(b"bfchar"),
                b"beginbfrange" => section = Some(b"bfrange"),
                b"endbfchar" | b"endbfrange" => {
                    section = None;
                    pending.clear();
                }
                _ => pending.clear(),
            },
            object => {
                pending.push(object);
                match (section, pending.as_slice()) {
                    (Some(b"bfchar"), [Object::String(code), Object::String(text)]) => {
                        map.insert(code_of(code), utf16(text));
                        pending.clear();
                    }
                    (Some(b"bfrange"), [Object::String(low), Object::String(high), target]) => {
                        range(&mut map, code_of(low), code_of(high), target);
                        pending.clear();
                    }
                    (Some(_), items) if items.len() > 3 => pending.clear(),
                    (None, _) => pending.clear(),
                    _ => {}
                }
            }
        }
    }
    map
}

fn range(map: &mut HashMap<u32, String>, low: u32, high: u32, target: &Object) {
    let span = high.saturating_sub(low).min(MAX_MAPPINGS as u32);
    match target {
        Object::String(first) => {
            let mut units: Vec<u16> = first
                .chunks(2)
                .map(|pair| u16::from(pair[0]) << 8 | u16::from(pair.get(1).copied().unwrap_or(0)))
                .collect();
            for code in low..=low.saturating_add(span) {
                map.insert(code, String::from_utf16_lossy(&units));
                if let Some(last) = units.last_mut() {
                    *last = last.wrapping_add(1);
                }
            }
        }
        Object::Array(targets) => {
            for (offset, text) in targets.iter().enumerate().take(span as usize + 1) {
                if let Object::String(text) = text {
                    map.insert(low + offset as u32, utf16(text));
                }
            }
        }
        _ => {}
    }
}

fn code_of(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .take(4)
        .fold(0u32, |value, byte| value << 8 | u32::from(*byte))
}

fn utf16(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|pair| u16::from(pair[0]) << 8 | u16::from(pair.get(1).copied().unwrap_or(0)))
        .collect();
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cmap_maps_single_codes_and_ranges() {
        let cmap = b"1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
            2 beginbfchar <0003> <0020> <0011> <0048> endbfchar\n\
            1 beginbfrange <0020> <0022> <0061> endbfrange\n\
            1 beginbfrange <0030> <0031> [<00DF> <FB01>] endbfrange";
        let map = parse_cmap(cmap);
        assert_eq!(map[&3], " ");
        assert_eq!(map[&0x11], "H");
        assert_eq!(map[&0x21], "b");
        assert_eq!(map[&0x22], "c");
        assert_eq!(map[&0x31], "\u{fb01}");
    }

    #[test]
    fn a_hostile_range_is_cut() {
        let map = parse_cmap(b"beginbfrange <00000000> <FFFFFFFF> <0041> endbfrange");
        assert!(map.len() <= MAX_MAPPINGS + 1);
    }
}
