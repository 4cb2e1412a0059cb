//! Reading a PDF's text, page by page, for the `documents` service: ClawEnvKit's server reads
//! the task's PDFs with pypdf, so a task that points `documents` at a PDF gets its text here
//! as it would there.
//!
//! The reader is small and self-contained on purpose. A PDF in a task folder comes from a
//! pull request, so every size is bounded ([`Limits`]), nothing recurses without a bound, and
//! bad bytes give an error or less text, never a panic. It reads what document writers
//! produce for text (objects found by scanning, so a broken cross-reference table does not
//! matter; object streams; FlateDecode; simple fonts with their encodings and `/Differences`;
//! composite fonts through `ToUnicode`), and lays lines out with pypdf's rules (see `text`).
//! Out of reach: encrypted files (refused), text inside form XObjects, fonts with neither
//! a usable encoding nor `ToUnicode`, right-to-left reordering, and, for simple fonts of the
//! standard 14 without a `/Widths` array, exact glyph widths (averages stand in, which only
//! matters for whether a narrow gap between two fragments of one line is a space).

mod document;
mod fonts;
mod syntax;
mod text;

use document::Document;

/// What a PDF may cost to read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The file itself.
    pub file_bytes: usize,
    /// Everything its streams decompress to, together.
    pub decoded_bytes: usize,
    /// Indirect objects.
    pub objects: usize,
    /// Pages.
    pub pages: usize,
    /// The text of one page.
    pub page_text_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            file_bytes: 32 << 20,
            decoded_bytes: 64 << 20,
            objects: 200_000,
            pages: 5_000,
            page_text_bytes: 1 << 20,
        }
    }
}

/// Why a file's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    /// The file does not start like a PDF.
    #[error("not a PDF (no `%PDF-` header)")]
    NotAPdf,
    /// The file is encrypted (its text cannot be read without the password).
    #[error("the PDF is encrypted")]
    Encrypted,
    /// The file's structure is broken where its text depends on it.
    #[error("the PDF is damaged: {0}")]
    Damaged(&'static str),
    /// The file goes past one of the [`Limits`].
    #[error("the PDF has more {0} than clawtest reads")]
    TooLarge(&'static str),
}

/// The text of every page of the PDF `bytes`, in page order.
pub fn page_texts(bytes: &[u8], limits: Limits) -> Result<Vec<String>, PdfError> {
    if bytes.len() > limits.file_bytes {
        return Err(PdfError::TooLarge("bytes"));
    }
    let document = Document::read(bytes, limits)?;
    let pages = document.pages()?;
    Ok(pages
        .iter()
        .map(|page| text::page_text(&document, page, limits.page_text_bytes))
        .collect())
}

#[cfg(test)]
mod tests;
