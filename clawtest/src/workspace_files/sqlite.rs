//! A SQLite database written in the file format itself (sqlite.org/fileformat2.html), not
//! through the SQLite library: a generated database is a few tables of typed rows, which the
//! format stores simply, and building SQLite's C source would cost every clean build more than
//! this file does. Pages of 4096 bytes; page 1 holds the header and `sqlite_schema` (a single
//! leaf); each table is a b-tree of leaf pages under as many levels of interior pages as its
//! rows need; rows are stored in rowid order (an `INTEGER PRIMARY KEY` is the rowid); no row
//! is long enough to spill onto an overflow page (each is at most [`ROW_BYTES`]). Python's
//! `sqlite3` reads the result and `PRAGMA integrity_check` passes on it (tests).

use super::spec::kind_name;
use super::{Cell, Table};

const PAGE: usize = 4096;
/// The largest record a row may be: far under the 4061 bytes a leaf cell holds locally.
const ROW_BYTES: usize = 4000;
/// The SQLite version the header says wrote the file (3.45.1): any 3.x reads it.
const WRITER_VERSION: u32 = 3_045_001;

/// The database's bytes, or why its tables cannot be written (a row too long, rowids repeated,
/// more than `limit` bytes of rows, definitions past page 1).
pub(super) fn database(tables: &[Table], limit: usize) -> Result<Vec<u8>, String> {
    let mut pages: Vec<Vec<u8>> = vec![Vec::new()];
    let mut schema = Vec::new();
    let mut total = 0usize;
    for (index, table) in tables.iter().enumerate() {
        if table.name.to_ascii_lowercase().starts_with("sqlite_") {
            return Err(format!(
                "tables[{index}].name: `{}` is reserved by SQLite (names starting with sqlite_)",
                table.name
            ));
        }
        let cells = rows(table, index, &mut total, limit)?;
        let root = tree(cells, &mut pages);
        let rowid = (index + 1) as i64;
        let record = record(&[
            Cell::Text("table".into()),
            Cell::Text(table.name.clone()),
            Cell::Text(table.name.clone()),
            Cell::Integer(root as i64),
            Cell::Text(create_statement(table)),
        ]);
        schema.push(leaf_cell(rowid, &record));
    }
    pages[0] = leaf_page(&schema, 100).ok_or(
        "the tables' definitions do not fit on SQLite's first page: fewer tables or columns",
    )?;
    let count = pages.len();
    write_header(&mut pages[0], count);
    Ok(pages.concat())
}

/// `CREATE TABLE "name" ("column" TYPE, …)`, names quoted so a keyword is a name too.
fn create_statement(table: &Table) -> String {
    let columns: Vec<String> = table
        .columns
        .iter()
        .map(|column| {
            format!(
                "\"{}\" {}{}",
                column.name,
                kind_name(column.kind).to_ascii_uppercase(),
                if column.primary_key {
                    " PRIMARY KEY"
                } else {
                    ""
                }
            )
        })
        .collect();
    format!("CREATE TABLE \"{}\" ({})", table.name, columns.join(", "))
}

/// The table's leaf cells in rowid order.
fn rows(
    table: &Table,
    index: usize,
    total: &mut usize,
    limit: usize,
) -> Result<Vec<(i64, Vec<u8>)>, String> {
    let key = table.columns.iter().position(|column| column.primary_key);
    let mut keyed = Vec::with_capacity(table.rows.len());
    for (number, row) in table.rows.iter().enumerate() {
        let rowid = match key.map(|key| &row[key]) {
            Some(Cell::Integer(id)) => *id,
            _ => number as i64 + 1,
        };
        // The rowid alias is stored as NULL in the record: the rowid holds it.
        let values: Vec<Cell> = row
            .iter()
            .enumerate()
            .map(|(column, value)| {
                if Some(column) == key {
                    Cell::Null
                } else {
                    value.clone()
                }
            })
            .collect();
        let record = record(&values);
        if record.len() > ROW_BYTES {
            return Err(format!(
                "tables[{index}].rows[{number}]: the row is {} bytes; a row is at most {ROW_BYTES}",
                record.len()
            ));
        }
        *total += record.len();
        if *total > limit {
            return Err(format!("the rows come to more than {limit} bytes"));
        }
        keyed.push((rowid, number, record));
    }
    keyed.sort_by_key(|(rowid, _, _)| *rowid);
    if let Some(pair) = keyed.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(format!(
            "tables[{index}].rows[{}]: the primary key {} repeats rows[{}]'s",
            pair[1].1.max(pair[0].1),
            pair[0].0,
            pair[1].1.min(pair[0].1)
        ));
    }
    Ok(keyed
        .into_iter()
        .map(|(rowid, _, record)| (rowid, leaf_cell(rowid, &record)))
        .collect())
}

/// Writes the b-tree of `cells` (rowid, leaf cell) as new pages; gives its root's page number.
fn tree(cells: Vec<(i64, Vec<u8>)>, pages: &mut Vec<Vec<u8>>) -> usize {
    // The leaves, filled in order; then each level of interior pages over the one below,
    // until one page is left: the root.
    let mut level: Vec<(usize, i64)> = Vec::new();
    let mut start = 0;
    loop {
        let mut end = start;
        let mut used = 8;
        while end < cells.len() && used + 2 + cells[end].1.len() <= PAGE {
            used += 2 + cells[end].1.len();
            end += 1;
        }
        let group: Vec<Vec<u8>> = cells[start..end]
            .iter()
            .map(|(_, cell)| cell.clone())
            .collect();
        pages.push(leaf_page(&group, 0).unwrap_or_default());
        let last = if end > start { cells[end - 1].0 } else { 0 };
        level.push((pages.len(), last));
        start = end;
        if start >= cells.len() {
            break;
        }
    }
    while level.len() > 1 {
        // Each interior page holds up to CHILDREN children (a cell is at most 13 bytes and
        // its pointer 2), spread evenly so that no page is left with a single child.
        const CHILDREN: usize = (PAGE - 12) / 15;
        let groups = level.len().div_ceil(CHILDREN);
        let size = level.len().div_ceil(groups);
        let mut above = Vec::new();
        for children in level.chunks(size) {
            // Each child but the last is a cell; the last is the right-most pointer.
            let (right, last) = children[children.len() - 1];
            let cells: Vec<Vec<u8>> = children[..children.len() - 1]
                .iter()
                .map(|child| interior_cell(*child))
                .collect();
            pages.push(interior_page(&cells, right));
            above.push((pages.len(), last));
        }
        level = above;
    }
    level[0].0
}

fn interior_cell((page, key): (usize, i64)) -> Vec<u8> {
    let mut cell = (page as u32).to_be_bytes().to_vec();
    varint(key as u64, &mut cell);
    cell
}

fn leaf_cell(rowid: i64, record: &[u8]) -> Vec<u8> {
    let mut cell = Vec::with_capacity(record.len() + 12);
    varint(record.len() as u64, &mut cell);
    varint(rowid as u64, &mut cell);
    cell.extend_from_slice(record);
    cell
}

/// A table leaf page (type 13) with `cells`, its header at `offset` (100 on page 1); `None`
/// when they do not fit.
fn leaf_page(cells: &[Vec<u8>], offset: usize) -> Option<Vec<u8>> {
    page(13, cells, offset, None)
}

fn interior_page(cells: &[Vec<u8>], right: usize) -> Vec<u8> {
    page(5, cells, 0, Some(right as u32)).unwrap_or_default()
}

fn page(kind: u8, cells: &[Vec<u8>], offset: usize, right: Option<u32>) -> Option<Vec<u8>> {
    let header = if right.is_some() { 12 } else { 8 };
    let content: usize = cells.iter().map(Vec::len).sum();
    if offset + header + 2 * cells.len() + content > PAGE {
        return None;
    }
    let mut page = vec![0u8; PAGE];
    let mut top = PAGE;
    let mut pointer = offset + header;
    for cell in cells {
        top -= cell.len();
        page[top..top + cell.len()].copy_from_slice(cell);
        page[pointer..pointer + 2].copy_from_slice(&(top as u16).to_be_bytes());
        pointer += 2;
    }
    page[offset] = kind;
    page[offset + 3..offset + 5].copy_from_slice(&(cells.len() as u16).to_be_bytes());
    page[offset + 5..offset + 7].copy_from_slice(&(top as u16).to_be_bytes());
    if let Some(right) = right {
        page[offset + 8..offset + 12].copy_from_slice(&right.to_be_bytes());
    }
    Some(page)
}

/// The 100-byte database header at the start of page 1.
fn write_header(page: &mut [u8], page_count: usize) {
    let mut put = |at: usize, value: u32| page[at..at + 4].copy_from_slice(&value.to_be_bytes());
    put(24, 1); // file change counter
    put(28, page_count as u32);
    put(40, 1); // schema cookie
    put(44, 4); // schema format
    put(56, 1); // UTF-8
    put(92, 1); // version-valid-for: the change counter
    put(96, WRITER_VERSION);
    page[..16].copy_from_slice(b"SQLite format 3\0");
    page[16..18].copy_from_slice(&(PAGE as u16).to_be_bytes());
    page[18] = 1; // legacy write version
    page[19] = 1; // legacy read version
    page[21] = 64; // payload fractions, fixed by the format
    page[22] = 32;
    page[23] = 32;
}

/// A record: its header (its own size, then each value's serial type), then the values.
fn record(values: &[Cell]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut body = Vec::new();
    for value in values {
        match value {
            Cell::Null => varint(0, &mut types),
            Cell::Integer(0) => varint(8, &mut types),
            Cell::Integer(1) => varint(9, &mut types),
            Cell::Integer(integer) => {
                let (serial, width) = integer_width(*integer);
                varint(serial, &mut types);
                body.extend_from_slice(&integer.to_be_bytes()[8 - width..]);
            }
            Cell::Real(real) => {
                varint(7, &mut types);
                body.extend_from_slice(&real.to_be_bytes());
            }
            Cell::Text(text) => {
                varint(13 + 2 * text.len() as u64, &mut types);
                body.extend_from_slice(text.as_bytes());
            }
        }
    }
    // The header's size counts the varint that gives it.
    let mut size = types.len() + 1;
    while varint_len(size as u64) + types.len() != size {
        size += 1;
    }
    let mut record = Vec::with_capacity(size + body.len());
    varint(size as u64, &mut record);
    record.extend_from_slice(&types);
    record.extend_from_slice(&body);
    record
}

/// The serial type of an integer and its width in bytes: the smallest that holds it.
fn integer_width(integer: i64) -> (u64, usize) {
    let fits = |bits: u32| integer >= -(1i64 << (bits - 1)) && integer < (1i64 << (bits - 1));
    match () {
        () if fits(8) => (1, 1),
        () if fits(16) => (2, 2),
        () if fits(24) => (3, 3),
        () if fits(32) => (4, 4),
        () if fits(48) => (5, 6),
        () => (6, 8),
    }
}

fn varint_len(value: u64) -> usize {
    let mut scratch = Vec::new();
    varint(value, &mut scratch);
    scratch.len()
}

/// SQLite's variable-length integer: big-endian groups of 7 bits, the high bit set on all but
/// the last; a value past 56 bits takes 9 bytes, the ninth holding 8 bits.
fn varint(value: u64, out: &mut Vec<u8>) {
    if value >> 56 != 0 {
        let mut bytes = [0u8; 9];
        bytes[8] = value as u8;
        let mut rest = value >> 8;
        for byte in bytes[..8].iter_mut().rev() {
            *byte = (rest as u8 & 0x7f) | 0x80;
            rest >>= 7;
        }
        out.extend_from_slice(&bytes);
        return;
    }
    let mut groups = Vec::with_capacity(8);
    let mut rest = value;
    loop {
        groups.push((rest & 0x7f) as u8);
        rest >>= 7;
        if rest == 0 {
            break;
        }
    }
    let last = groups.len() - 1;
    for (index, group) in groups.iter().rev().enumerate() {
        out.push(if index < last { group | 0x80 } else { *group });
    }
}

/// The values of every row a SQLite file's table leaf pages hold, one a line (text as
/// written, numbers in decimal): what an agent that queries the database can see, for the
/// feasibility proof and coverage to look words up in. `None` when `bytes` is not a SQLite
/// file. It reads any database, not only those written here, within its bytes: a cell that
/// runs past its page is cut there (its overflow pages are not followed).
pub fn values_text(bytes: &[u8]) -> Option<String> {
    if !bytes.starts_with(b"SQLite format 3\0") || bytes.len() < 100 {
        return None;
    }
    let size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        size if size >= 512 && size.is_power_of_two() => usize::from(size),
        _ => return None,
    };
    let mut text = String::new();
    for (number, page) in bytes.chunks(size).enumerate() {
        let header = if number == 0 { 100 } else { 0 };
        if page.get(header) != Some(&13) || page.len() < header + 8 {
            continue;
        }
        let cells = usize::from(u16::from_be_bytes([page[header + 3], page[header + 4]]));
        for cell in 0..cells {
            let at = header + 8 + 2 * cell;
            let Some(pointer) = page.get(at..at + 2) else {
                break;
            };
            let start = usize::from(u16::from_be_bytes([pointer[0], pointer[1]]));
            if let Some(cell) = page.get(start..) {
                record_values(cell, &mut text);
            }
        }
    }
    Some(text)
}

/// A table leaf cell's values (after its payload size and rowid), each on a line of `text`.
fn record_values(cell: &[u8], text: &mut String) {
    let Some((_, used)) = read_varint(cell) else {
        return;
    };
    let Some((_, rowid)) = read_varint(&cell[used..]) else {
        return;
    };
    let record = &cell[used + rowid..];
    let Some((header_size, mut at)) = read_varint(record) else {
        return;
    };
    let header_size = (header_size as usize).min(record.len());
    let mut body = header_size;
    while at < header_size {
        let Some((serial, used)) = read_varint(&record[at..]) else {
            return;
        };
        at += used;
        let width = match serial {
            0 | 8 | 9 => 0,
            1..=4 => serial as usize,
            5 => 6,
            6 | 7 => 8,
            serial if serial >= 12 => ((serial - 12) / 2) as usize,
            _ => return,
        };
        let Some(value) = record.get(body..body.saturating_add(width).min(record.len())) else {
            return;
        };
        match serial {
            8 | 9 => text.push_str(if serial == 8 { "0" } else { "1" }),
            1..=6 => {
                let mut integer: i64 = if value.first().is_some_and(|byte| byte & 0x80 != 0) {
                    -1
                } else {
                    0
                };
                for byte in value {
                    integer = (integer << 8) | i64::from(*byte);
                }
                text.push_str(&integer.to_string());
            }
            7 if value.len() == 8 => {
                let real = f64::from_be_bytes(value.try_into().unwrap_or_default());
                text.push_str(&super::table::real_text(real));
            }
            serial if serial >= 13 && serial % 2 == 1 => {
                text.push_str(&String::from_utf8_lossy(value))
            }
            _ => {}
        }
        text.push('\n');
        body = body.saturating_add(width);
    }
}

/// A varint at the start of `bytes`: its value and its length.
fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (index, byte) in bytes.iter().take(9).enumerate() {
        if index == 8 {
            return Some(((value << 8) | u64::from(*byte), 9));
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, index + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::varint;

    #[test]
    fn varints_are_sqlites() {
        let encoded = |value: u64| {
            let mut out = Vec::new();
            varint(value, &mut out);
            out
        };
        assert_eq!(encoded(0), [0]);
        assert_eq!(encoded(127), [0x7f]);
        assert_eq!(encoded(128), [0x81, 0x00]);
        assert_eq!(encoded(300), [0x82, 0x2c]);
        assert_eq!(encoded(u64::MAX), [0xff; 9]);
        assert_eq!(encoded((-1i64) as u64).len(), 9);
    }
}
