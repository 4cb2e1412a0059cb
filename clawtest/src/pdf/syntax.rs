//! PDF's object syntax: the lexer and parser of numbers, names, strings, arrays,
//! dictionaries, references and the operators of a content stream (ISO 32000-1, 7.2–7.3).
//!
//! The parser never fails on bad bytes: a file is whatever a pull request committed, so a
//! token it cannot read becomes [`Object::Null`] or ends the object, and nesting deeper than
//! [`MAX_DEPTH`] stops there instead of recursing without bound.

/// Arrays and dictionaries nested deeper than this are cut: no real PDF comes close, and a
/// hostile one cannot recurse the stack away.
const MAX_DEPTH: usize = 64;

/// One PDF object. Streams are found by the document reader, not here: the lexer only
/// stops before the `stream` keyword.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Object {
    Null,
    Boolean(bool),
    Integer(i64),
    Real(f64),
    Name(Vec<u8>),
    String(Vec<u8>),
    Array(Vec<Object>),
    Dictionary(Dictionary),
    Reference(u32),
    /// A bare keyword: a content stream's operator, or `stream`/`endobj` in a file.
    Keyword(Vec<u8>),
}

/// A dictionary, in file order (a key given twice: the first wins, as lookups go first).
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Dictionary(pub Vec<(Vec<u8>, Object)>);

impl Dictionary {
    pub(super) fn get(&self, key: &[u8]) -> Option<&Object> {
        self.0
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    }
}

impl Object {
    pub(super) fn number(&self) -> Option<f64> {
        match self {
            Object::Integer(value) => Some(*value as f64),
            Object::Real(value) => Some(*value),
            _ => None,
        }
    }

    pub(super) fn name(&self) -> Option<&[u8]> {
        match self {
            Object::Name(name) => Some(name),
            _ => None,
        }
    }
}

/// A cursor over bytes that reads one object at a time.
pub(super) struct Lexer<'a> {
    bytes: &'a [u8],
    pub(super) position: usize,
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t' | b'\x0c' | b'\0')
}

fn is_delimiter(byte: u8) -> bool {
    matches!(
        byte,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

fn is_regular(byte: u8) -> bool {
    !is_whitespace(byte) && !is_delimiter(byte)
}

impl<'a> Lexer<'a> {
    pub(super) fn new(bytes: &'a [u8], position: usize) -> Lexer<'a> {
        Lexer { bytes, position }
    }

    /// Skips whitespace and comments.
    pub(super) fn skip_blank(&mut self) {
        while let Some(&byte) = self.bytes.get(self.position) {
            if is_whitespace(byte) {
                self.position += 1;
            } else if byte == b'%' {
                while let Some(&byte) = self.bytes.get(self.position) {
                    if byte == b'\n' || byte == b'\r' {
                        break;
                    }
                    self.position += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The next object, or `None` at the end. A reference (`12 0 R`) is read as one object.
    pub(super) fn next_object(&mut self) -> Option<Object> {
        self.object(0)
    }

    fn object(&mut self, depth: usize) -> Option<Object> {
        self.skip_blank();
        let byte = *self.bytes.get(self.position)?;
        let object = match byte {
            b'/' => {
                self.position += 1;
                Object::Name(self.name())
            }
            b'(' => {
                self.position += 1;
                Object::String(self.literal_string())
            }
            b'<' if self.bytes.get(self.position + 1) == Some(&b'<') => {
                self.position += 2;
                Object::Dictionary(self.dictionary(depth))
            }
            b'<' => {
                self.position += 1;
                Object::String(self.hex_string())
            }
            b'[' => {
                self.position += 1;
                Object::Array(self.array(depth))
            }
            b']' | b'>' | b')' | b'{' | b'}' => {
                // A stray closing delimiter: step over it so the caller advances.
                self.position += 1;
                Object::Keyword(vec![byte])
            }
            _ => self.word(),
        };
        Some(object)
    }

    /// A number, `true`/`false`/`null`, a keyword, or a reference when a number is followed
    /// by a generation and `R`.
    fn word(&mut self) -> Object {
        let start = self.position;
        while self
            .bytes
            .get(self.position)
            .is_some_and(|&byte| is_regular(byte))
        {
            self.position += 1;
        }
        if self.position == start {
            // Nothing regular here: a lone delimiter such as `%` at the end; step over it.
            self.position += 1;
            return Object::Null;
        }
        let word = &self.bytes[start..self.position];
        match word {
            b"true" => return Object::Boolean(true),
            b"false" => return Object::Boolean(false),
            b"null" => return Object::Null,
            _ => {}
        }
        let Some(number) = parse_number(word) else {
            return Object::Keyword(word.to_vec());
        };
        if let Object::Integer(first) = number
            && let Some(reference) = self.reference_after(first)
        {
            return reference;
        }
        number
    }

    /// `G R` after the number `first`, read ahead without consuming anything else.
    fn reference_after(&mut self, first: i64) -> Option<Object> {
        let saved = self.position;
        let mut ahead = Lexer::new(self.bytes, self.position);
        ahead.skip_blank();
        let generation_start = ahead.position;
        while ahead
            .bytes
            .get(ahead.position)
            .is_some_and(u8::is_ascii_digit)
        {
            ahead.position += 1;
        }
        let is_generation = ahead.position > generation_start
            && ahead
                .bytes
                .get(ahead.position)
                .is_some_and(|&byte| is_whitespace(byte));
        if is_generation {
            ahead.skip_blank();
            let is_r = ahead.bytes.get(ahead.position) == Some(&b'R')
                && !ahead
                    .bytes
                    .get(ahead.position + 1)
                    .is_some_and(|&byte| is_regular(byte));
            if is_r && let Ok(number) = u32::try_from(first) {
                self.position = ahead.position + 1;
                return Some(Object::Reference(number));
            }
        }
        self.position = saved;
        None
    }

    fn name(&mut self) -> Vec<u8> {
        let mut name = Vec::new();
        while let Some(&byte) = self.bytes.get(self.position) {
            if !is_regular(byte) {
                break;
            }
            self.position += 1;
            if byte == b'#'
                && let Some(value) = self
                    .bytes
                    .get(self.position..self.position + 2)
                    .and_then(|hex| std::str::from_utf8(hex).ok())
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            {
                name.push(value);
                self.position += 2;
                continue;
            }
            name.push(byte);
        }
        name
    }

    fn literal_string(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut open = 1usize;
        while let Some(&byte) = self.bytes.get(self.position) {
            self.position += 1;
            match byte {
                b'(' => {
                    open += 1;
                    out.push(byte);
                }
                b')' => {
                    open -= 1;
                    if open == 0 {
                        return out;
                    }
                    out.push(byte);
                }
                b'\\' => self.escape(&mut out),
                _ => out.push(byte),
            }
        }
        out
    }

    fn escape(&mut self, out: &mut Vec<u8>) {
        let Some(&byte) = self.bytes.get(self.position) else {
            return;
        };
        self.position += 1;
        match byte {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'0'..=b'7' => {
                let mut value = u32::from(byte - b'0');
                for _ in 0..2 {
                    match self.bytes.get(self.position) {
                        Some(&digit @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(digit - b'0');
                            self.position += 1;
                        }
                        _ => break,
                    }
                }
                out.push((value & 0xff) as u8);
            }
            // A backslash before an end of line continues the string on the next line.
            b'\r' => {
                if self.bytes.get(self.position) == Some(&b'\n') {
                    self.position += 1;
                }
            }
            b'\n' => {}
            other => out.push(other),
        }
    }

    fn hex_string(&mut self) -> Vec<u8> {
        let start = self.position;
        let end = self.bytes[start..]
            .iter()
            .position(|byte| *byte == b'>')
            .map_or(self.bytes.len(), |at| start + at);
        self.position = (end + 1).min(self.bytes.len());
        hex_digits(&self.bytes[start..end])
    }

    fn array(&mut self, depth: usize) -> Vec<Object> {
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            match self.bytes.get(self.position) {
                None => return items,
                Some(b']') => {
                    self.position += 1;
                    return items;
                }
                Some(_) if depth >= MAX_DEPTH => {
                    self.position += 1;
                }
                Some(_) => match self.object(depth + 1) {
                    Some(item) => items.push(item),
                    None => return items,
                },
            }
        }
    }

    fn dictionary(&mut self, depth: usize) -> Dictionary {
        let mut entries = Vec::new();
        loop {
            self.skip_blank();
            match self.bytes.get(self.position) {
                None => break,
                Some(b'>') => {
                    self.position += 1;
                    if self.bytes.get(self.position) == Some(&b'>') {
                        self.position += 1;
                    }
                    break;
                }
                Some(_) if depth >= MAX_DEPTH => {
                    self.position += 1;
                }
                Some(_) => {
                    let Some(key) = self.object(depth + 1) else {
                        break;
                    };
                    let Object::Name(key) = key else {
                        // Not a key: skip it rather than pair the wrong things.
                        continue;
                    };
                    // A key without a value (`<< /A >>`) leaves Null.
                    self.skip_blank();
                    if self.bytes.get(self.position) == Some(&b'>') {
                        entries.push((key, Object::Null));
                        continue;
                    }
                    let value = self.object(depth + 1).unwrap_or(Object::Null);
                    entries.push((key, value));
                }
            }
        }
        Dictionary(entries)
    }
}

/// The bytes hexadecimal digits spell, other characters skipped (a hex string's body, or
/// ASCIIHexDecode data up to its `>`).
pub(super) fn hex_digits(text: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = text
        .iter()
        .take_while(|byte| **byte != b'>')
        .filter_map(|byte| (*byte as char).to_digit(16).map(|digit| digit as u8))
        .collect();
    // An odd count ends as if followed by 0 (7.3.4.3).
    digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair.get(1).copied().unwrap_or(0))
        .collect()
}

fn parse_number(word: &[u8]) -> Option<Object> {
    let text = std::str::from_utf8(word).ok()?;
    let looks_numeric = text
        .bytes()
        .all(|byte| byte.is_ascii_digit() || matches!(byte, b'+' | b'-' | b'.'))
        && text.bytes().any(|byte| byte.is_ascii_digit());
    if !looks_numeric {
        return None;
    }
    if let Ok(integer) = text.parse::<i64>() {
        return Some(Object::Integer(integer));
    }
    // `-.5`, `4.`, and the odd `--3` some writers produce (read as -3, as readers do).
    let trimmed = text.trim_start_matches(['+', '-']);
    let negative = text.starts_with('-');
    let value = trimmed
        .parse::<f64>()
        .ok()
        .filter(|value| value.is_finite())?;
    Some(Object::Real(if negative { -value } else { value }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<Object> {
        let mut lexer = Lexer::new(text.as_bytes(), 0);
        std::iter::from_fn(|| lexer.next_object()).collect()
    }

    #[test]
    fn objects_of_every_kind_are_read() {
        let objects =
            all("<< /Type /Page /Kids [3 0 R 4 0 R] /N -2.5 >> (a\\(b\\)\\101) <48 69 7> BT");
        let Object::Dictionary(dictionary) = &objects[0] else {
            panic!("{objects:?}")
        };
        assert_eq!(
            dictionary.get(b"Type"),
            Some(&Object::Name(b"Page".to_vec()))
        );
        assert_eq!(
            dictionary.get(b"Kids"),
            Some(&Object::Array(vec![
                Object::Reference(3),
                Object::Reference(4)
            ]))
        );
        assert_eq!(dictionary.get(b"N"), Some(&Object::Real(-2.5)));
        assert_eq!(objects[1], Object::String(b"a(b)A".to_vec()));
        assert_eq!(objects[2], Object::String(b"Hip".to_vec()));
        assert_eq!(objects[3], Object::Keyword(b"BT".to_vec()));
    }

    #[test]
    fn two_numbers_are_not_a_reference_without_r() {
        assert_eq!(
            all("72 800 Td"),
            vec![
                Object::Integer(72),
                Object::Integer(800),
                Object::Keyword(b"Td".to_vec())
            ]
        );
    }

    #[test]
    fn deep_nesting_and_garbage_end_without_recursing_away() {
        let deep = "[".repeat(100_000);
        let objects = all(&deep);
        assert_eq!(objects.len(), 1);
        assert!(all(")))>>}{").len() <= 7);
    }
}
