use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/pdf")
}

/// pypdf's text of every page of every committed PDF (made by fpdf2, reportlab and qpdf:
/// core fonts, an embedded composite font, compression, object streams), recorded by
/// `tests/fixtures/pdf/make.py`, is what clawtest reads.
#[test]
fn every_committed_pdf_reads_as_pypdf_reads_it() {
    let answers: BTreeMap<String, Vec<String>> =
        serde_json::from_slice(&std::fs::read(fixtures().join("answers.json")).unwrap()).unwrap();
    assert!(answers.len() >= 5);
    for (name, expected) in answers {
        let bytes = std::fs::read(fixtures().join(&name)).unwrap();
        let pages = page_texts(&bytes, Limits::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(pages, expected, "{name}");
    }
}

#[test]
fn a_file_that_is_not_a_pdf_is_refused() {
    assert_eq!(
        page_texts(b"hello, world", Limits::default()),
        Err(PdfError::NotAPdf)
    );
}

#[test]
fn a_cut_file_gives_an_error_or_less_text_never_a_panic() {
    let bytes = std::fs::read(fixtures().join("reportlab_memo.pdf")).unwrap();
    for end in (0..bytes.len()).step_by(7) {
        let _ = page_texts(&bytes[..end], Limits::default());
    }
    let bytes = std::fs::read(fixtures().join("object_streams.pdf")).unwrap();
    for end in (0..bytes.len()).step_by(5) {
        let _ = page_texts(&bytes[..end], Limits::default());
    }
}

#[test]
fn a_decompression_bomb_stops_at_the_limit() {
    let zeros = vec![0u8; 8 << 20];
    let packed = miniz_oxide::deflate::compress_to_vec_zlib(&zeros, 9);
    let mut pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
        2 0 obj << /Type /Pages /Kids [3 0 R] >> endobj\n\
        3 0 obj << /Type /Page /Contents 4 0 R >> endobj\n"
        .to_vec();
    pdf.extend_from_slice(
        format!(
            "4 0 obj << /Length {} /Filter /FlateDecode >>\nstream\n",
            packed.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(&packed);
    pdf.extend_from_slice(b"\nendstream endobj\ntrailer << /Root 1 0 R >>\n%%EOF");
    let limits = Limits {
        decoded_bytes: 1 << 20,
        ..Limits::default()
    };
    assert_eq!(
        page_texts(&pdf, limits),
        Err(PdfError::TooLarge("decompressed streams"))
    );
}

#[test]
fn a_page_tree_that_loops_is_damaged_not_endless() {
    let pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
        2 0 obj << /Type /Pages /Kids [2 0 R] >> endobj\ntrailer << /Root 1 0 R >>";
    assert_eq!(
        page_texts(pdf, Limits::default()),
        Err(PdfError::Damaged("the page tree loops"))
    );
}

#[test]
fn a_hand_written_page_with_tj_gaps_and_octal_escapes_reads() {
    let pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
        2 0 obj << /Type /Pages /Kids [3 0 R] >> endobj\n\
        3 0 obj << /Type /Page /Contents 4 0 R >> endobj\n\
        4 0 obj << >> stream\nBT /F1 12 Tf 72 700 Td [(Hello)-600(world)] TJ 0 -20 Td (caf\\351) Tj ET\nendstream endobj\n";
    assert_eq!(
        page_texts(pdf, Limits::default()).unwrap(),
        vec!["Hello world\ncaf\u{e9}".to_owned()]
    );
}
