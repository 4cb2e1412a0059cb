use serde_json::{Value, json};

use super::*;

fn read(value: Value) -> Result<Vec<FileSpec>, Vec<SpecError>> {
    read_all(&value, &Limits::default())
}

fn rendered(value: Value) -> Vec<(String, Vec<u8>)> {
    let specs = read(value).unwrap();
    let bytes = render_all(&specs, &Limits::default()).unwrap();
    specs.into_iter().map(|spec| spec.path).zip(bytes).collect()
}

fn first_error(value: Value) -> String {
    let errors = read(value).unwrap_err();
    errors[0].to_string()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn csv_is_quoted_as_python_writes_it_and_json_keeps_its_order() {
    let files = rendered(json!([
        {"path": "/workspace/sales.csv", "csv": {
            "columns": ["region", "note", "revenue"],
            "rows": [["North", "a, b", 1250], ["South", "say \"hi\"", 980.5], ["East", null, -3]]
        }},
        {"path": "config.json", "json": {"zeta": 1, "alpha": [true, null]}},
        {"path": "/workspace/notes/readme.md", "text": "# Notes\n"}
    ]));
    assert_eq!(files[0].0, "sales.csv");
    assert_eq!(
        String::from_utf8(files[0].1.clone()).unwrap(),
        "region,note,revenue\r\nNorth,\"a, b\",1250\r\nSouth,\"say \"\"hi\"\"\",980.5\r\nEast,,-3\r\n"
    );
    assert_eq!(
        String::from_utf8(files[1].1.clone()).unwrap(),
        "{\n  \"zeta\": 1,\n  \"alpha\": [\n    true,\n    null\n  ]\n}\n"
    );
    assert_eq!(
        files[2],
        ("notes/readme.md".to_owned(), b"# Notes\n".to_vec())
    );
}

/// pypdf 7.1.1's `PdfReader(strict=True)` read this very file (its bytes are the same on every
/// machine) as the same two pages: `["Quarterly report", "Revenue: $1,250,000 (up 12%)\nCafé
/// (Paris) \\ costs: 40"]`; the reader of `documents` must agree with it.
#[test]
fn a_pdf_reads_back_as_its_lines_through_the_documents_reader() {
    let pages = json!([
        "Quarterly report",
        "Revenue: $1,250,000 (up 12%)\nCaf\u{e9} (Paris) \\ costs: 40"
    ]);
    let files = rendered(json!([{"path": "report.pdf", "pdf": {"pages": pages}}]));
    let text = crate::pdf::page_texts(&files[0].1, crate::pdf::Limits::default()).unwrap();
    assert_eq!(
        text,
        [
            "Quarterly report",
            "Revenue: $1,250,000 (up 12%)\nCaf\u{e9} (Paris) \\ costs: 40"
        ]
    );
}

/// The PNG's chunks, their CRCs checked, and its pixels inflated.
fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let mut at = 8;
    let (mut width, mut height, mut data) = (0, 0, Vec::new());
    while at < bytes.len() {
        let length = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let body = &bytes[at + 8..at + 8 + length];
        let crc = u32::from_be_bytes(bytes[at + 8 + length..at + 12 + length].try_into().unwrap());
        assert_eq!(crc, image_crc(&bytes[at + 4..at + 8 + length]), "{kind:?}");
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[..4].try_into().unwrap());
                height = u32::from_be_bytes(body[4..8].try_into().unwrap());
                assert_eq!(&body[8..], [8, 2, 0, 0, 0]);
            }
            b"IDAT" => data.extend_from_slice(body),
            _ => {}
        }
        at += 12 + length;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&data).unwrap();
    let row = width as usize * 3 + 1;
    let pixels = raw.chunks(row).flat_map(|line| {
        assert_eq!(line[0], 0, "unfiltered rows");
        line[1..].to_vec()
    });
    (width, height, pixels.collect())
}

/// An independent CRC-32 (table-driven, as zlib computes it).
fn image_crc(data: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|n| {
            (0..8).fold(n, |c, _| {
                if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                }
            })
        })
        .collect();
    !data.iter().fold(!0u32, |c, b| {
        table[((c ^ u32::from(*b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[test]
fn a_png_decodes_to_the_drawn_pixels() {
    let files = rendered(json!([{"path": "receipt.png", "image": {
        "width": 40, "height": 20, "background": "white",
        "draw": [
            {"text": "A", "x": 2, "y": 3, "size": 1, "color": "black"},
            {"rectangle": [20, 0, 5, 5], "color": "#ff0000"},
            {"line": [30, 0, 39, 19], "color": "blue"}
        ]
    }}]));
    let (width, height, pixels) = decode_png(&files[0].1);
    assert_eq!((width, height), (40, 20));
    let at = |x: usize, y: usize| &pixels[(y * 40 + x) * 3..(y * 40 + x) * 3 + 3];
    let glyph = super::image::glyph('A').unwrap();
    for (row, bits) in glyph.iter().enumerate() {
        for bit in 0..8 {
            let expected: &[u8] = if bits >> bit & 1 == 1 {
                &[0, 0, 0]
            } else {
                &[255, 255, 255]
            };
            assert_eq!(at(2 + bit, 3 + row), expected, "glyph pixel ({bit}, {row})");
        }
    }
    assert_eq!(at(22, 2), [255, 0, 0]);
    assert_eq!(at(25, 2), [255, 255, 255]);
    assert_eq!(at(30, 0), [20, 40, 200]);
    assert_eq!(at(39, 19), [20, 40, 200]);
}

#[test]
fn a_jpeg_has_the_described_size() {
    let files = rendered(json!([{"path": "scan.jpg", "image": {
        "width": 300, "height": 120, "draw": [{"text": "INVOICE 42", "x": 10, "y": 10, "size": 3}]
    }}]));
    let bytes = &files[0].1;
    assert_eq!(&bytes[..2], [0xFF, 0xD8]);
    assert_eq!(&bytes[bytes.len() - 2..], [0xFF, 0xD9]);
    let frame = bytes
        .windows(2)
        .position(|pair| pair == [0xFF, 0xC0])
        .unwrap();
    let height = u16::from_be_bytes([bytes[frame + 5], bytes[frame + 6]]);
    let width = u16::from_be_bytes([bytes[frame + 7], bytes[frame + 8]]);
    assert_eq!((width, height), (300, 120));
}

/// One of each kind: the bytes every machine must write.
fn every_kind() -> Value {
    json!([
        {"path": "a.txt", "text": "hello\n"},
        {"path": "b.csv", "csv": {"columns": ["x"], "rows": [[1.5], ["y"]]}},
        {"path": "c.json", "json": {"k": [1, 2]}},
        {"path": "d.db", "sqlite": {"tables": [{"name": "t", "columns": [{"name": "id", "type": "integer", "primary_key": true}, {"name": "v", "type": "text"}], "rows": [[2, "b"], [1, "a"]]}]}},
        {"path": "e.pdf", "pdf": {"pages": ["one", "two"]}},
        {"path": "f.png", "image": {"width": 64, "height": 32, "draw": [{"text": "Hi", "x": 4, "y": 4}]}},
        {"path": "g.jpeg", "image": {"width": 64, "height": 32, "background": "yellow", "draw": [{"text": "Hi", "x": 4, "y": 4}]}}
    ])
}

/// The SHA-256 of each file of [`every_kind`]: a change here changes what every generated task
/// folder holds, so it must be on purpose (and the examples' fixtures regenerated).
const EXPECTED_HASHES: &[(&str, &str)] = &[
    (
        "a.txt",
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
    ),
    (
        "b.csv",
        "28f417081e54761b1d66c3c5c8c57df1d185fef8dc333ea8bcb44431493a6a27",
    ),
    (
        "c.json",
        "fe674448a78e5c0c9d8025ba78d51c90c77ba8b8ac95814b75d5d4177f1caf79",
    ),
    (
        "d.db",
        "9410618cf41b3ef94075d9746624e027a4dbea369b27293ffb5818de26692ef3",
    ),
    (
        "e.pdf",
        "65dd94eff8e5c8dee99027942ed8fa46a17621aba74bb07f8f1e91bd48e9da8a",
    ),
    (
        "f.png",
        "af8879fd1e743a15221db6fff3fdb7ee227183e43ec0eb9fdf27b6fbc2e5479f",
    ),
    (
        "g.jpeg",
        "c029f808ad2b5a185d49aa1b4b0a66903d6417abf5b4dcd66309df0bdca1383e",
    ),
];

#[test]
fn the_same_description_gives_the_same_bytes_on_every_machine() {
    let hashes: Vec<(String, String)> = rendered(every_kind())
        .into_iter()
        .map(|(path, bytes)| (path, sha256(&bytes)))
        .collect();
    let expected: Vec<(String, String)> = EXPECTED_HASHES
        .iter()
        .map(|(path, hash)| ((*path).to_owned(), (*hash).to_owned()))
        .collect();
    assert_eq!(hashes, expected);
}

#[test]
fn sqlite_databases_are_read_by_python_sqlite3() {
    let many: Vec<Value> = (0..1000)
        .map(|index: usize| {
            json!([
                index as i64 * 7 - 3000,
                format!("item {index} {}", "x".repeat(index % 300)),
                index as f64 / 4.0,
                if index.is_multiple_of(5) {
                    Value::Null
                } else {
                    json!(index)
                }
            ])
        })
        .collect();
    let files = rendered(json!([{"path": "shop.sqlite", "sqlite": {"tables": [
        {"name": "order", "columns": [
            {"name": "id", "type": "integer", "primary_key": true},
            {"name": "label", "type": "text"},
            {"name": "price", "type": "real"},
            {"name": "stock", "type": "integer"}
        ], "rows": many},
        {"name": "empty", "columns": [{"name": "x", "type": "text"}], "rows": []},
        {"name": "numbers", "columns": [{"name": "n", "type": "integer"}],
         "rows": [[0], [1], [-1], [127], [128], [-32769], [8388608], [2147483648_i64], [140737488355328_i64], [i64::MAX], [i64::MIN]]}
    ]}}]));
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("shop.sqlite");
    std::fs::write(&path, &files[0].1).unwrap();
    let script = r#"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("PRAGMA integrity_check").fetchone()[0])
print(db.execute('SELECT count(*), sum(id), min(id), max(id), sum(length(label)), sum(price), count(stock) FROM "order"').fetchone())
print(db.execute('SELECT * FROM "order" WHERE id = 3993').fetchone())
print(db.execute("SELECT count(*) FROM empty").fetchone()[0])
print([row[0] for row in db.execute("SELECT n FROM numbers ORDER BY rowid")])
print(db.execute("SELECT sql FROM sqlite_schema WHERE name = 'order'").fetchone()[0])
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("python3 runs (CI's toolchain has it)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected_label: usize = (0..1000)
        .map(|index: usize| format!("item {index} ").len() + index % 300)
        .sum();
    let expected = format!(
        "ok\n(1000, {}, -3000, 3993, {expected_label}, {:?}, 800)\n(3993, 'item 999 {}', 249.75, 999)\n0\n[0, 1, -1, 127, 128, -32769, 8388608, 2147483648, 140737488355328, {}, {}]\nCREATE TABLE \"order\" (\"id\" INTEGER PRIMARY KEY, \"label\" TEXT, \"price\" REAL, \"stock\" INTEGER)\n",
        (0..1000).map(|index: i64| index * 7 - 3000).sum::<i64>(),
        (0..1000).map(|index| f64::from(index) / 4.0).sum::<f64>(),
        "x".repeat(999 % 300),
        i64::MAX,
        i64::MIN,
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
}

#[test]
fn mistakes_name_their_field() {
    let cases = [
        (
            json!({"path": "a.txt"}),
            "workspace_files: must be a list of files",
        ),
        (
            json!([{"path": "../x.txt", "text": "a"}]),
            "workspace_files[0].path: `../x.txt` is not a file under /workspace",
        ),
        (
            json!([{"path": "x.txt"}]),
            "workspace_files[0]: says nothing of the content",
        ),
        (
            json!([{"path": "x.txt", "text": "a", "csv": {}}]),
            "workspace_files[0]: gives text and csv",
        ),
        (
            json!([{"path": "x.txt", "txt": "a"}]),
            "workspace_files[0].txt: unknown field; did you mean `text`?",
        ),
        (
            json!([{"path": "x.pdf", "text": "a"}]),
            "workspace_files[0].path: `x.pdf` does not name a text file",
        ),
        (
            json!([{"path": "x.txt", "csv": {"columns": ["a"], "rows": []}}]),
            "workspace_files[0].path: `x.txt` does not name a csv file: its name ends in .csv",
        ),
        (
            json!([{"path": "x.csv", "csv": {"columns": ["a", "b"], "rows": [[1]]}}]),
            "workspace_files[0].csv.rows[0]: 1 values; the columns are 2",
        ),
        (
            json!([{"path": "x.csv", "csv": {"columns": ["a"], "rows": [[{"k": 1}]]}}]),
            "workspace_files[0].csv.rows[0][0]: must be text, a number or null, not a mapping",
        ),
        (
            json!([{"path": "x.db", "sqlite": {"tables": [{"name": "t", "columns": [{"name": "n", "type": "integr"}], "rows": []}]}}]),
            "workspace_files[0].sqlite.tables[0].columns[0].type: `integr` is not a column type; did you mean `integer`?",
        ),
        (
            json!([{"path": "x.db", "sqlite": {"tables": [{"name": "t", "columns": [{"name": "n", "type": "integer"}], "rows": [["five"]]}]}}]),
            "workspace_files[0].sqlite.tables[0].rows[0][0]: `five` is not a value of column `n` (integer)",
        ),
        (
            json!([{"path": "x.db", "sqlite": {"tables": [{"name": "1t", "columns": [], "rows": []}]}}]),
            "workspace_files[0].sqlite.tables[0].name: `1t` is not a name",
        ),
        (
            json!([{"path": "x.pdf", "pdf": {"pages": ["tab\there"]}}]),
            "workspace_files[0].pdf.pages[0], line 1: `\t` cannot be written",
        ),
        (
            json!([{"path": "x.png", "image": {"width": 0, "height": 10}}]),
            "workspace_files[0].image.width: give a whole number of pixels from 1 to 1600",
        ),
        (
            json!([{"path": "x.png", "image": {"width": 10, "height": 10, "background": "whit"}}]),
            "workspace_files[0].image.background: `whit` is not a colour; did you mean `white`?",
        ),
        (
            json!([{"path": "x.png", "image": {"width": 10, "height": 10, "draw": [{"text": "\u{4e2d}", "x": 0, "y": 0}]}}]),
            "workspace_files[0].image.draw[0].text: `\u{4e2d}` has no glyph",
        ),
        (
            json!([{"path": "x.png", "image": {"width": 10, "height": 10, "draw": [{"circle": 3}]}}]),
            "workspace_files[0].image.draw[0]: draws nothing",
        ),
        (
            json!([{"path": "a.txt", "text": "a"}, {"path": "/workspace/a.txt", "text": "b"}]),
            "workspace_files[1].path: `a.txt` is described twice",
        ),
    ];
    for (value, expected) in cases {
        let error = first_error(value.clone());
        assert!(
            error.starts_with(expected),
            "{value}\n gave: {error}\n not: {expected}"
        );
    }
}

#[test]
fn hostile_sizes_are_refused_before_anything_large_is_made() {
    let limits = Limits::default();
    let rows: Vec<Value> = (0..=limits.rows).map(|_| json!([1])).collect();
    let error = first_error(json!([{"path": "x.csv", "csv": {"columns": ["a"], "rows": rows}}]));
    assert!(error.contains("1001 rows; at most 1000"), "{error}");
    let error =
        first_error(json!([{"path": "x.png", "image": {"width": 100_000, "height": 100_000}}]));
    assert!(error.contains("image.width"), "{error}");
    let files: Vec<Value> = (0..=limits.files)
        .map(|index| json!({"path": format!("f{index}.txt"), "text": "a"}))
        .collect();
    assert!(first_error(Value::Array(files)).contains("at most 8"));
    let pages: Vec<Value> = (0..=limits.pages).map(|_| json!("a")).collect();
    assert!(
        first_error(json!([{"path": "x.pdf", "pdf": {"pages": pages}}]))
            .contains("21 pages; at most 20")
    );
    // A row longer than a page's cell, and repeated primary keys, are errors of the database.
    let long = "x".repeat(900);
    let specs = read(json!([{"path": "x.db", "sqlite": {"tables": [{"name": "t", "columns": (0..5).map(|index| json!({"name": format!("c{index}"), "type": "text"})).collect::<Vec<_>>(), "rows": [[long, long, long, long, long]]}]}}])).unwrap();
    let error = render_all(&specs, &limits).unwrap_err().to_string();
    assert!(
        error.starts_with("workspace_files[0].sqlite: tables[0].rows[0]: the row is"),
        "{error}"
    );
    let specs = read(json!([{"path": "x.db", "sqlite": {"tables": [{"name": "t", "columns": [{"name": "id", "type": "integer", "primary_key": true}], "rows": [[3], [3]]}]}}])).unwrap();
    let error = render_all(&specs, &limits).unwrap_err().to_string();
    assert!(
        error.contains("rows[1]: the primary key 3 repeats rows[0]'s"),
        "{error}"
    );
    // Files that are each within bounds but too large together.
    let small = Limits {
        total_bytes: 10,
        ..limits
    };
    let specs =
        read(json!([{"path": "a.txt", "text": "123456"}, {"path": "b.txt", "text": "123456"}]))
            .unwrap();
    let error = render_all(&specs, &small).unwrap_err().to_string();
    assert!(
        error.starts_with("workspace_files[1]: the files would come to more than 10 bytes"),
        "{error}"
    );
    // Drawings far outside the image cost nothing and draw nothing.
    let files = rendered(
        json!([{"path": "x.png", "image": {"width": 4, "height": 4, "draw": [
            {"rectangle": [-100000, -100000, 100000, 50], "color": "black"},
            {"text": "far away", "x": 100000, "y": 100000, "size": 8}
        ]}}]),
    );
    let (_, _, pixels) = decode_png(&files[0].1);
    assert!(pixels.iter().all(|byte| *byte == 255));
}
