//! A PDF of text pages: US Letter, Helvetica 11 pt (a standard font: nothing embedded) in
//! WinAnsiEncoding, one line a `Tj`, each 14 pt below the last. What pypdf and
//! [`crate::pdf`] read back is the page's lines. The content streams are not compressed, so a
//! task's PDF can be read in a diff; the cross-reference table is exact, so strict readers
//! need no repair.

use std::fmt::Write as _;

/// True for a character a page can hold: printable ASCII, or Latin-1's printable half (which
/// WinAnsiEncoding maps to the same codes).
pub(super) fn writable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{a0}'..='\u{ff}')
}

/// The PDF's bytes for `pages` (each a list of lines of [`writable`] characters).
pub(super) fn document(pages: &[Vec<String>]) -> Vec<u8> {
    // Objects: 1 catalog, 2 page tree, 3 font, then a page and its content for each page.
    let page_ids: Vec<usize> = (0..pages.len()).map(|index| 4 + 2 * index).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            page_ids
                .iter()
                .map(|id| format!("{id} 0 R"))
                .collect::<Vec<_>>()
                .join(" "),
            pages.len()
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    for (index, lines) in pages.iter().enumerate() {
        let content_id = page_ids[index] + 1;
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>"
            )
            .into_bytes(),
        );
        let stream = content(lines);
        let mut object = format!("<< /Length {} >>\nstream\n", stream.len()).into_bytes();
        object.extend_from_slice(&stream);
        object.extend_from_slice(b"\nendstream");
        objects.push(object);
    }
    let mut bytes = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (index, object) in objects.iter().enumerate() {
        offsets.push(bytes.len());
        bytes.extend_from_slice(format!("{} 0 obj\n", index + 1).as_bytes());
        bytes.extend_from_slice(object);
        bytes.extend_from_slice(b"\nendobj\n");
    }
    let table = bytes.len();
    let mut trailer = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
    for offset in offsets {
        let _ = writeln!(trailer, "{offset:010} 00000 n ");
    }
    let _ = write!(
        trailer,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{table}\n%%EOF\n",
        objects.len() + 1
    );
    bytes.extend_from_slice(trailer.as_bytes());
    bytes
}

/// A page's content stream: its lines from the top margin down.
fn content(lines: &[String]) -> Vec<u8> {
    let mut stream = b"BT\n/F1 11 Tf\n14 TL\n72 720 Td\n".to_vec();
    for (index, line) in lines.iter().enumerate() {
        if index > 0 {
            stream.extend_from_slice(b"T*\n");
        }
        stream.push(b'(');
        for c in line.chars() {
            // Latin-1 is WinAnsi's code for each writable character; the three that delimit a
            // string are escaped, and everything past ASCII written as an octal escape.
            let code = u32::from(c) as u8;
            match code {
                b'(' | b')' | b'\\' => stream.extend_from_slice(&[b'\\', code]),
                b' '..=b'~' => stream.push(code),
                _ => stream.extend_from_slice(format!("\\{code:03o}").as_bytes()),
            }
        }
        stream.extend_from_slice(b") Tj\n");
    }
    stream.extend_from_slice(b"ET");
    stream
}
