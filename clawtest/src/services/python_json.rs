//! Where and why CPython's `json.loads` rejects a text, for FastAPI's 422 `json_invalid`
//! answer (`loc: ["body", e.pos]`, `ctx.error: e.msg`).
//!
//! serde_json finds the same malformed bodies but words and places its errors differently
//! (byte columns, "EOF while parsing a value"); an agent retrying after a ClawEnvKit 422
//! sees CPython's message and character position, so the engine reports those. Only the
//! error path calls this: a body is first parsed by serde_json, and only when that fails is
//! it walked again here. The walk follows CPython's C scanner (`_json.c`, the default) of
//! Python 3.12 and earlier; 3.13 words trailing commas differently ("Illegal trailing
//! comma before end of object").
//!
//! The walk recurses once per nested array or object, as CPython's does, and stops at
//! [`MAX_DEPTH`] as CPython stops at its recursion limit: a request is text a harness
//! controls, and an unbounded walk of `[`×30000 overflowed the server thread's stack.

/// How deep arrays and objects may nest before the walk gives up. CPython's json scanner
/// raises `RecursionError` near its recursion limit of 1000 (a little earlier under
/// uvicorn, whose own frames count too); FastAPI then answers 400, not 422.
pub(crate) const MAX_DEPTH: usize = 1000;

/// What CPython's `json.loads` makes of a text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decoded {
    /// CPython would accept it (serde_json is stricter about `NaN` and `Infinity`, and
    /// about nesting: it stops at 128 levels).
    Accepted,
    /// A `JSONDecodeError`: `pos` in characters and `msg`.
    Invalid(usize, String),
    /// A `RecursionError`: the text nests more than [`MAX_DEPTH`] levels before any error.
    TooDeep,
}

/// What CPython's `json.loads` says of `text`.
pub(crate) fn decode(text: &str) -> Decoded {
    let chars: Vec<char> = text.chars().collect();
    let scanner = Scanner { s: &chars };
    let start = scanner.whitespace(0);
    let end = match scanner.value(start, 0) {
        Ok(end) => end,
        Err(Problem::Stop(at)) => return Decoded::Invalid(at, "Expecting value".into()),
        Err(Problem::Fail(at, msg)) => return Decoded::Invalid(at, msg.into()),
        Err(Problem::TooDeep) => return Decoded::TooDeep,
    };
    let end = scanner.whitespace(end);
    if end == chars.len() {
        Decoded::Accepted
    } else {
        Decoded::Invalid(end, "Extra data".into())
    }
}

/// CPython's failure modes: `StopIteration(idx)` (no value starts here, reported by the
/// caller as "Expecting value"), a `JSONDecodeError` raised on the spot, and the
/// `RecursionError` of a text nested too deep.
enum Problem {
    Stop(usize),
    Fail(usize, &'static str),
    TooDeep,
}

struct Scanner<'a> {
    s: &'a [char],
}

impl Scanner<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.s.get(i).copied()
    }

    fn whitespace(&self, mut i: usize) -> usize {
        while matches!(self.at(i), Some(' ' | '\t' | '\n' | '\r')) {
            i += 1;
        }
        i
    }

    fn literal(&self, i: usize, word: &str) -> bool {
        word.chars()
            .enumerate()
            .all(|(k, c)| self.at(i + k) == Some(c))
    }

    /// `scan_once_unicode`: the end of the value starting at `i`, `depth` containers in.
    fn value(&self, i: usize, depth: usize) -> Result<usize, Problem> {
        let Some(c) = self.at(i) else {
            return Err(Problem::Stop(i));
        };
        if matches!(c, '{' | '[') && depth >= MAX_DEPTH {
            return Err(Problem::TooDeep);
        }
        match c {
            '"' => return self.string(i + 1),
            '{' => return self.object(i + 1, depth + 1),
            '[' => return self.array(i + 1, depth + 1),
            _ => {}
        }
        for word in ["null", "true", "false", "NaN", "Infinity"] {
            if self.literal(i, word) {
                return Ok(i + word.chars().count());
            }
        }
        if let Some(end) = self.number(i) {
            return Ok(end);
        }
        if self.literal(i, "-Infinity") {
            return Ok(i + 9);
        }
        Err(Problem::Stop(i))
    }

    /// `_match_number_unicode`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`.
    fn number(&self, start: usize) -> Option<usize> {
        let digit = |i: usize| self.at(i).is_some_and(|c| c.is_ascii_digit());
        let mut i = start;
        if self.at(i) == Some('-') {
            i += 1;
        }
        match self.at(i) {
            Some('0') => i += 1,
            Some('1'..='9') => {
                while digit(i) {
                    i += 1;
                }
            }
            _ => return None,
        }
        if self.at(i) == Some('.') && digit(i + 1) {
            i += 2;
            while digit(i) {
                i += 1;
            }
        }
        if matches!(self.at(i), Some('e' | 'E')) {
            let mut j = i + 1;
            if matches!(self.at(j), Some('-' | '+')) {
                j += 1;
            }
            if digit(j) {
                while digit(j) {
                    j += 1;
                }
                i = j;
            }
        }
        Some(i)
    }

    /// `scanstring_unicode`, from just after the opening quote.
    fn string(&self, mut i: usize) -> Result<usize, Problem> {
        let begin = i - 1;
        loop {
            let c = loop {
                match self.at(i) {
                    None => return Err(Problem::Fail(begin, "Unterminated string starting at")),
                    Some(c @ ('"' | '\\')) => break c,
                    Some(c) if u32::from(c) <= 0x1f => {
                        return Err(Problem::Fail(i, "Invalid control character at"));
                    }
                    Some(_) => i += 1,
                }
            };
            i += 1;
            if c == '"' {
                return Ok(i);
            }
            match self.at(i) {
                None => return Err(Problem::Fail(begin, "Unterminated string starting at")),
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => i += 1,
                Some('u') => {
                    let hex_start = i + 1;
                    if hex_start + 4 >= self.s.len() {
                        return Err(Problem::Fail(i, "Invalid \\uXXXX escape"));
                    }
                    if !(hex_start..hex_start + 4).all(|k| self.s[k].is_ascii_hexdigit()) {
                        return Err(Problem::Fail(i, "Invalid \\uXXXX escape"));
                    }
                    i = hex_start + 4;
                }
                Some(_) => return Err(Problem::Fail(i - 1, "Invalid \\escape")),
            }
        }
    }

    /// `_parse_object_unicode`, from just after `{`.
    fn object(&self, i: usize, depth: usize) -> Result<usize, Problem> {
        let mut i = self.whitespace(i);
        if self.at(i) == Some('}') {
            return Ok(i + 1);
        }
        loop {
            if self.at(i) != Some('"') {
                return Err(Problem::Fail(
                    i,
                    "Expecting property name enclosed in double quotes",
                ));
            }
            i = self.whitespace(self.string(i + 1)?);
            if self.at(i) != Some(':') {
                return Err(Problem::Fail(i, "Expecting ':' delimiter"));
            }
            i = self.whitespace(self.value(self.whitespace(i + 1), depth)?);
            match self.at(i) {
                Some('}') => return Ok(i + 1),
                Some(',') => i = self.whitespace(i + 1),
                _ => return Err(Problem::Fail(i, "Expecting ',' delimiter")),
            }
        }
    }

    /// `_parse_array_unicode`, from just after `[`.
    fn array(&self, i: usize, depth: usize) -> Result<usize, Problem> {
        let mut i = self.whitespace(i);
        if self.at(i) == Some(']') {
            return Ok(i + 1);
        }
        loop {
            i = self.whitespace(self.value(i, depth)?);
            match self.at(i) {
                Some(']') => return Ok(i + 1),
                Some(',') => i = self.whitespace(i + 1),
                _ => return Err(Problem::Fail(i, "Expecting ',' delimiter")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Decoded, MAX_DEPTH, decode};

    fn decode_error(text: &str) -> Option<(usize, String)> {
        match decode(text) {
            Decoded::Accepted => None,
            Decoded::Invalid(at, msg) => Some((at, msg)),
            Decoded::TooDeep => panic!("{text:.40} is not too deep"),
        }
    }

    fn error(at: usize, msg: &str) -> Option<(usize, String)> {
        Some((at, msg.to_owned()))
    }

    #[test]
    fn gives_up_on_deep_nesting_without_exhausting_the_stack() {
        // 50 KB of brackets: unbounded recursion overflowed the server thread's stack.
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let deep = format!("{}{}", open.repeat(30_000), close.repeat(30_000));
            assert_eq!(decode(&deep), Decoded::TooDeep);
            let unclosed = open.repeat(30_000);
            assert_eq!(decode(&unclosed), Decoded::TooDeep);
        }
        // Up to the limit, CPython's answers are unchanged.
        let at_limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(decode(&at_limit), Decoded::Accepted);
        let over = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(decode(&over), Decoded::TooDeep);
        // An error met before the limit is reported as CPython reports it.
        let early = format!("[x{}", "[".repeat(5_000));
        assert_eq!(decode_error(&early), error(1, "Expecting value"));
    }

    #[test]
    fn reports_what_cpython_reports() {
        // Each pair as CPython 3.12's json.loads words and places it.
        assert_eq!(
            decode_error(r#"{"task_id": "#),
            error(12, "Expecting value")
        );
        assert_eq!(decode_error(r#"{"a": }"#), error(6, "Expecting value"));
        assert_eq!(decode_error(""), error(0, "Expecting value"));
        assert_eq!(
            decode_error(r#"{'a': 1}"#),
            error(1, "Expecting property name enclosed in double quotes")
        );
        assert_eq!(
            decode_error(r#"{"a": 1,}"#),
            error(8, "Expecting property name enclosed in double quotes")
        );
        assert_eq!(
            decode_error(r#"{"a" 1}"#),
            error(5, "Expecting ':' delimiter")
        );
        assert_eq!(
            decode_error(r#"{"a": 1 "b": 2}"#),
            error(8, "Expecting ',' delimiter")
        );
        assert_eq!(decode_error("[1, 2"), error(5, "Expecting ',' delimiter"));
        assert_eq!(decode_error("[1,]"), error(3, "Expecting value"));
        assert_eq!(
            decode_error(r#"{"a": "b"#),
            error(6, "Unterminated string starting at")
        );
        assert_eq!(
            decode_error("\"a\nb\""),
            error(2, "Invalid control character at")
        );
        assert_eq!(decode_error(r#""a\qb""#), error(2, "Invalid \\escape"));
        assert_eq!(
            decode_error(r#""\u12x4""#),
            error(2, "Invalid \\uXXXX escape")
        );
        assert_eq!(
            decode_error(r#""\u12""#),
            error(2, "Invalid \\uXXXX escape")
        );
        assert_eq!(
            decode_error("\"\\"),
            error(0, "Unterminated string starting at")
        );
        assert_eq!(decode_error(r#"{"a": 1} x"#), error(9, "Extra data"));
        assert_eq!(decode_error("01"), error(1, "Extra data"));
        assert_eq!(decode_error("-"), error(0, "Expecting value"));
        // Positions count characters, not bytes.
        assert_eq!(decode_error(r#"{"é": x}"#), error(6, "Expecting value"));
    }

    #[test]
    fn accepts_what_cpython_accepts() {
        for text in [
            r#"{"a": [1, -2.5e3, true, false, null, "x\"\u00e9"]}"#,
            " [] ",
            "NaN",
            "-Infinity",
            "1E+2",
            "2.",
        ] {
            // "2." is "2" then "Extra data" in CPython.
            let expected = (text == "2.").then(|| (1, "Extra data".to_owned()));
            assert_eq!(decode_error(text), expected, "{text}");
        }
    }
}
