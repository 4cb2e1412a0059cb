//! Images: an RGB canvas with text in an 8×8 bitmap font (`font8x8`, the public-domain font,
//! no font files and no system fonts, so the pixels are the same everywhere), rectangles and
//! lines, encoded as PNG (written here: its chunks are a few lines, and the compressor is
//! `miniz_oxide`'s, which the PDF reader already uses) or baseline JPEG (`jpeg-encoder`, pure
//! Rust without dependencies: 2.3 s of a clean build here).

use font8x8::UnicodeFonts as _;

use super::{Color, Drawing, ImageFormat, Picture};

/// The glyph of `c`, rows top first, the lowest bit leftmost: printable ASCII and Latin-1.
pub(super) fn glyph(c: char) -> Option<[u8; 8]> {
    match c {
        ' '..='~' => font8x8::BASIC_FONTS.get(c),
        '\u{a0}'..='\u{ff}' => font8x8::LATIN_FONTS.get(c),
        _ => None,
    }
}

/// The picture drawn and encoded in its format.
pub(super) fn encode(picture: &Picture) -> Result<Vec<u8>, String> {
    let canvas = draw(picture);
    match picture.format {
        ImageFormat::Png => Ok(png(&canvas)),
        ImageFormat::Jpeg => {
            let mut bytes = Vec::new();
            jpeg_encoder::Encoder::new(&mut bytes, 90)
                .encode(
                    &canvas.pixels,
                    canvas.width as u16,
                    canvas.height as u16,
                    jpeg_encoder::ColorType::Rgb,
                )
                .map_err(|error| format!("cannot be encoded as JPEG: {error}"))?;
            Ok(bytes)
        }
    }
}

/// Pixels, RGB, rows top first.
pub(super) struct Canvas {
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) pixels: Vec<u8>,
}

impl Canvas {
    /// Paints the rectangle's part inside the canvas (nothing for an empty one).
    fn fill(&mut self, x: i64, y: i64, width: i64, height: i64, Color(rgb): Color) {
        let left = x.clamp(0, self.width as i64) as usize;
        let right = x.saturating_add(width).clamp(0, self.width as i64) as usize;
        let top = y.clamp(0, self.height as i64) as usize;
        let bottom = y.saturating_add(height).clamp(0, self.height as i64) as usize;
        for row in top..bottom {
            for column in left..right {
                let at = (row * self.width + column) * 3;
                self.pixels[at..at + 3].copy_from_slice(&rgb);
            }
        }
    }
}

pub(super) fn draw(picture: &Picture) -> Canvas {
    let (width, height) = (picture.width as usize, picture.height as usize);
    let mut canvas = Canvas {
        width,
        height,
        pixels: picture.background.0.repeat(width * height),
    };
    for drawing in &picture.drawings {
        match drawing {
            Drawing::Text {
                x,
                y,
                text,
                scale,
                color,
            } => {
                let size = i64::from(*scale);
                for (line, characters) in text.split('\n').enumerate() {
                    let top = y + line as i64 * 10 * size;
                    for (index, c) in characters.chars().enumerate() {
                        let left = x + index as i64 * 8 * size;
                        let rows = glyph(c).unwrap_or_default();
                        for (row, bits) in rows.iter().enumerate() {
                            for bit in 0..8 {
                                if bits >> bit & 1 == 1 {
                                    canvas.fill(
                                        left + bit * size,
                                        top + row as i64 * size,
                                        size,
                                        size,
                                        *color,
                                    );
                                }
                            }
                        }
                    }
                }
            }
            Drawing::Rectangle {
                x,
                y,
                width,
                height,
                color,
                filled: true,
            } => canvas.fill(*x, *y, *width, *height, *color),
            Drawing::Rectangle {
                x,
                y,
                width,
                height,
                color,
                filled: false,
            } => {
                canvas.fill(*x, *y, *width, 1, *color);
                canvas.fill(*x, y + height - 1, *width, 1, *color);
                canvas.fill(*x, *y, 1, *height, *color);
                canvas.fill(x + width - 1, *y, 1, *height, *color);
            }
            Drawing::Line { from, to, color } => line(&mut canvas, *from, *to, *color),
        }
    }
    canvas
}

/// Bresenham's line, its points outside the canvas skipped.
fn line(canvas: &mut Canvas, (mut x, mut y): (i64, i64), (x2, y2): (i64, i64), color: Color) {
    let (dx, dy) = ((x2 - x).abs(), -(y2 - y).abs());
    let (step_x, step_y) = (if x < x2 { 1 } else { -1 }, if y < y2 { 1 } else { -1 });
    let mut error = dx + dy;
    loop {
        canvas.fill(x, y, 1, 1, color);
        if x == x2 && y == y2 {
            break;
        }
        let doubled = 2 * error;
        if doubled >= dy {
            error += dy;
            x += step_x;
        }
        if doubled <= dx {
            error += dx;
            y += step_y;
        }
    }
}

/// A PNG: 8-bit RGB, no interlace, each row unfiltered, the image data zlib-compressed.
fn png(canvas: &Canvas) -> Vec<u8> {
    let row = canvas.width * 3;
    let mut raw = Vec::with_capacity((row + 1) * canvas.height);
    for line in canvas.pixels.chunks(row.max(1)) {
        raw.push(0);
        raw.extend_from_slice(line);
    }
    let mut header = Vec::with_capacity(13);
    header.extend_from_slice(&(canvas.width as u32).to_be_bytes());
    header.extend_from_slice(&(canvas.height as u32).to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut bytes, b"IHDR", &header);
    chunk(
        &mut bytes,
        b"IDAT",
        &miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6),
    );
    chunk(&mut bytes, b"IEND", &[]);
    bytes
}

fn chunk(bytes: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    bytes.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = bytes.len();
    bytes.extend_from_slice(kind);
    bytes.extend_from_slice(data);
    let crc = crc32(&bytes[start..]);
    bytes.extend_from_slice(&crc.to_be_bytes());
}

/// CRC-32 (the polynomial PNG and zlib use), bit by bit: images are small and written once.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
