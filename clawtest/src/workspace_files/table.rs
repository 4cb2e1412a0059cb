//! CSV and JSON files: the formats Python's `csv` and `json` modules read, written the same way
//! every time.

use super::Cell;

/// A CSV file (RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled;
/// lines end with `\r\n`, as Python's `csv.writer` writes them).
pub(super) fn csv(columns: &[String], rows: &[Vec<Cell>]) -> Vec<u8> {
    let mut text = String::new();
    let header: Vec<Cell> = columns.iter().cloned().map(Cell::Text).collect();
    for row in std::iter::once(&header).chain(rows) {
        let fields: Vec<String> = row.iter().map(field).collect();
        text.push_str(&fields.join(","));
        text.push_str("\r\n");
    }
    text.into_bytes()
}

fn field(cell: &Cell) -> String {
    let text = match cell {
        Cell::Null => return String::new(),
        Cell::Integer(integer) => return integer.to_string(),
        Cell::Real(real) => return real_text(*real),
        Cell::Text(text) => text,
    };
    if text.contains([',', '"', '\n', '\r']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.clone()
    }
}

/// A real number as Python prints it: the shortest text that reads back the same, with `.0`
/// on a whole one.
pub(super) fn real_text(real: f64) -> String {
    let text = real.to_string();
    if text.contains(['.', 'e', 'E']) || !real.is_finite() {
        text
    } else {
        format!("{text}.0")
    }
}

/// A JSON file: the value pretty-printed with two spaces in the order it was written, and a
/// final line break.
pub(super) fn json(value: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
