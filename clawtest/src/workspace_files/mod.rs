//! Workspace files made from a typed description: what `generate` writes beside a task when the
//! Generator asks for files. A model describes a file (a text, a CSV's columns and rows, a JSON
//! value, SQLite tables, a PDF's pages of text, an image's size, background and what is drawn
//! on it) and never gives its bytes; clawtest renders them here. The same [`FileSpec`] gives
//! the same bytes on every machine (no time, no randomness, no map order), and every size a
//! model controls is bounded ([`Limits`]): a description that asks for more is an error naming
//! its field, never a large allocation.
//!
//! `spec.rs` reads the description (raw JSON value → [`FileSpec`], each mistake at its field;
//! `fields.rs` the shapes of its fields, `picture.rs` an image's);
//! `table.rs` renders text, CSV and JSON; `sqlite.rs` writes the SQLite file format; `pdf.rs`
//! a PDF of text pages; `image.rs` draws and encodes PNG and JPEG.

mod fields;
mod image;
mod pdf;
mod picture;
mod spec;
mod sqlite;
mod table;

pub use spec::{FIELD, read_all};
pub use sqlite::values_text as sqlite_values_text;

/// What a description may ask for: a model writes it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Files a task may describe.
    pub files: usize,
    /// The bytes of one rendered file.
    pub file_bytes: usize,
    /// The bytes of every rendered file of a task together.
    pub total_bytes: usize,
    /// Rows of a CSV file or of one SQLite table.
    pub rows: usize,
    /// Columns of a CSV file or of one SQLite table.
    pub columns: usize,
    /// Tables of a SQLite file.
    pub tables: usize,
    /// Pages of a PDF.
    pub pages: usize,
    /// Lines of one PDF page.
    pub page_lines: usize,
    /// Characters of one PDF line.
    pub line_chars: usize,
    /// An image's width and height, in pixels.
    pub image_side: u32,
    /// Things drawn on one image.
    pub drawings: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            files: 8,
            file_bytes: 512 << 10,
            total_bytes: 2 << 20,
            rows: 1_000,
            columns: 32,
            tables: 8,
            pages: 20,
            page_lines: 60,
            line_chars: 120,
            image_side: 1_600,
            drawings: 100,
        }
    }
}

/// One file to write into the workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSpec {
    /// Where it goes, relative to `/workspace` (`/`-separated, no `..`).
    pub path: String,
    /// What it holds.
    pub content: Content,
}

/// What a file holds, by kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A text file, as written.
    Text(String),
    /// A CSV file: a header row, then the rows.
    Csv {
        /// The header.
        columns: Vec<String>,
        /// The rows, each as long as the header.
        rows: Vec<Vec<Cell>>,
    },
    /// A JSON file: the value, pretty-printed in the order written.
    Json(serde_json::Value),
    /// A SQLite database.
    Sqlite(Vec<Table>),
    /// A PDF: each page's lines of text.
    Pdf(Vec<Vec<String>>),
    /// A PNG or JPEG image.
    Image(Picture),
}

/// One value of a CSV row or a SQLite row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// No value (an empty CSV field, SQL `NULL`).
    Null,
    /// A whole number.
    Integer(i64),
    /// A finite number with a fraction.
    Real(f64),
    /// Text.
    Text(String),
}

/// A table of a SQLite file.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Its name (letters, digits and `_`).
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<Column>,
    /// Its rows, each as long as `columns`, each value of its column's type (or null).
    pub rows: Vec<Vec<Cell>>,
}

/// A column of a SQLite table.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Its name (letters, digits and `_`).
    pub name: String,
    /// Its declared type.
    pub kind: ColumnKind,
    /// `INTEGER PRIMARY KEY`: the row's id (an integer column, unique, never null).
    pub primary_key: bool,
}

/// The declared type of a SQLite column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// `INTEGER`.
    Integer,
    /// `REAL`.
    Real,
    /// `TEXT`.
    Text,
}

/// An image: its size, format, background and what is drawn on it, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Picture {
    /// PNG or JPEG (from the file's extension).
    pub format: ImageFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The colour every pixel starts as.
    pub background: Color,
    /// What is drawn, later over earlier.
    pub drawings: Vec<Drawing>,
}

/// An image's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// Lossless.
    Png,
    /// Baseline JPEG, quality 90.
    Jpeg,
}

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Color(pub [u8; 3]);

/// One thing drawn on an image; coordinates in pixels from the top left, clipped to the image.
#[derive(Debug, Clone, PartialEq)]
pub enum Drawing {
    /// Text in an 8×8 bitmap font, each glyph `scale` times as large, from its top left corner.
    Text {
        /// Left edge.
        x: i64,
        /// Top edge.
        y: i64,
        /// The text (one line; `\n` starts another below).
        text: String,
        /// 1 to 8: glyphs of 8·scale pixels.
        scale: u32,
        /// Ink.
        color: Color,
    },
    /// A rectangle, filled or outlined.
    Rectangle {
        /// Left edge.
        x: i64,
        /// Top edge.
        y: i64,
        /// Width.
        width: i64,
        /// Height.
        height: i64,
        /// Ink.
        color: Color,
        /// Filled, or a one-pixel outline.
        filled: bool,
    },
    /// A one-pixel line between two points.
    Line {
        /// Start.
        from: (i64, i64),
        /// End.
        to: (i64, i64),
        /// Ink.
        color: Color,
    },
}

/// Why a description cannot be rendered: the field (`workspace_files[2].csv.rows[4]`) and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    /// The field, from `workspace_files`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl SpecError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> SpecError {
        SpecError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl FileSpec {
    /// The file's bytes, at most `limits.file_bytes` of them (an error naming `field` past it).
    pub fn render(&self, field: &str, limits: &Limits) -> Result<Vec<u8>, SpecError> {
        let bytes = match &self.content {
            Content::Text(text) => text.clone().into_bytes(),
            Content::Csv { columns, rows } => table::csv(columns, rows),
            Content::Json(value) => table::json(value),
            Content::Sqlite(tables) => sqlite::database(tables, limits.file_bytes)
                .map_err(|message| SpecError::new(format!("{field}.sqlite"), message))?,
            Content::Pdf(pages) => pdf::document(pages),
            Content::Image(picture) => image::encode(picture)
                .map_err(|message| SpecError::new(format!("{field}.image"), message))?,
        };
        if bytes.len() > limits.file_bytes {
            return Err(SpecError::new(
                field,
                format!(
                    "the file would be {} bytes; a generated file is at most {}",
                    bytes.len(),
                    limits.file_bytes
                ),
            ));
        }
        Ok(bytes)
    }
}

/// Every file of `specs` rendered, in order; at most `limits.total_bytes` together.
pub fn render_all(specs: &[FileSpec], limits: &Limits) -> Result<Vec<Vec<u8>>, SpecError> {
    let mut total = 0;
    let mut rendered = Vec::with_capacity(specs.len());
    for (index, spec) in specs.iter().enumerate() {
        let field = format!("{FIELD}[{index}]");
        let bytes = spec.render(&field, limits)?;
        total += bytes.len();
        if total > limits.total_bytes {
            return Err(SpecError::new(
                field,
                format!(
                    "the files would come to more than {} bytes together",
                    limits.total_bytes
                ),
            ));
        }
        rendered.push(bytes);
    }
    Ok(rendered)
}

#[cfg(test)]
mod tests;
