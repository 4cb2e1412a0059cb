//! The fuzz check of the PDF text reader (`clawtest::pdf`), which reads the PDFs a task's
//! folder holds, that is, bytes a pull request chose: any bytes give the pages' text or an
//! error, never a panic, a stack overflow or a hang, and no page's text is longer than the
//! limit allows.
//!
//! The check, shared by the fuzz target (`fuzz/fuzz_targets/pdf_text.rs`) and by
//! `clawtest/tests/fuzz_seeds.rs`, which runs every committed seed (tests/fixtures/pdf) through
//! it on each test run.

use clawtest::pdf::{Limits, page_texts};

/// Panics when `data` breaks a property above; returns quietly otherwise.
pub(crate) fn check(data: &[u8]) {
    // Small limits, so that the search reaches them.
    let limits = Limits {
        file_bytes: 1 << 20,
        decoded_bytes: 4 << 20,
        objects: 10_000,
        pages: 200,
        page_text_bytes: 64 << 10,
    };
    if let Ok(pages) = page_texts(data, limits) {
        assert!(pages.len() <= limits.pages);
        for page in pages {
            assert!(page.len() <= limits.page_text_bytes);
        }
    }
}
