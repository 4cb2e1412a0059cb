//! An image's description read: its size within the limits, its background, and each thing
//! drawn (text in the bitmap font's characters, a rectangle, a line) with its colour.

use serde_json::{Map, Value};

use super::fields::{bounded_text, known_keys, list, object};
use super::{Color, Drawing, ImageFormat, Limits, Picture, SpecError};

pub(super) fn read_picture(
    value: &Value,
    field: &str,
    extension: Option<&str>,
    limits: &Limits,
) -> Result<Picture, SpecError> {
    let map = object(value, field)?;
    known_keys(map, field, &["width", "height", "background", "draw"])?;
    let side = |key: &str| -> Result<u32, SpecError> {
        match map.get(key).and_then(Value::as_u64) {
            Some(side) if (1..=u64::from(limits.image_side)).contains(&side) => Ok(side as u32),
            _ => Err(SpecError::new(
                format!("{field}.{key}"),
                format!(
                    "give a whole number of pixels from 1 to {}",
                    limits.image_side
                ),
            )),
        }
    };
    let (width, height) = (side("width")?, side("height")?);
    let background = match map.get("background") {
        None => Color([255, 255, 255]),
        Some(value) => color(value, &format!("{field}.background"))?,
    };
    let at = format!("{field}.draw");
    let items = match map.get("draw") {
        None => &[][..],
        some => list(some, &at, limits.drawings, "drawings")?,
    };
    let drawings = items
        .iter()
        .enumerate()
        .map(|(index, item)| drawing(item, &format!("{at}[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let format = match extension {
        Some("png") => ImageFormat::Png,
        _ => ImageFormat::Jpeg,
    };
    Ok(Picture {
        format,
        width,
        height,
        background,
        drawings,
    })
}

/// The named colours a model may use, or `#rrggbb`.
const COLORS: &[(&str, [u8; 3])] = &[
    ("white", [255, 255, 255]),
    ("black", [0, 0, 0]),
    ("gray", [128, 128, 128]),
    ("lightgray", [211, 211, 211]),
    ("red", [220, 20, 20]),
    ("green", [20, 140, 20]),
    ("blue", [20, 40, 200]),
    ("yellow", [250, 220, 30]),
    ("orange", [250, 140, 0]),
];

fn color(value: &Value, field: &str) -> Result<Color, SpecError> {
    let Value::String(text) = value else {
        return Err(SpecError::new(field, "give a colour name or `#rrggbb`"));
    };
    let lower = text.to_ascii_lowercase();
    if let Some((_, rgb)) = COLORS.iter().find(|(known, _)| *known == lower) {
        return Ok(Color(*rgb));
    }
    let hex = lower
        .strip_prefix('#')
        .filter(|hex| hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit()));
    if let Some(hex) = hex {
        let byte = |at: usize| u8::from_str_radix(&hex[at..at + 2], 16).unwrap_or(0);
        return Ok(Color([byte(0), byte(2), byte(4)]));
    }
    let names: Vec<&str> = COLORS.iter().map(|(known, _)| *known).collect();
    Err(SpecError::new(
        field,
        format!(
            "`{text}` is not a colour; {} (or `#rrggbb`)",
            crate::spelling::suggestion(&lower, &names, "the names are")
        ),
    ))
}

fn coordinate(map: &Map<String, Value>, key: &str, field: &str) -> Result<i64, SpecError> {
    match map.get(key).and_then(Value::as_i64) {
        Some(value) if value.abs() <= 100_000 => Ok(value),
        _ => Err(SpecError::new(
            format!("{field}.{key}"),
            "give a whole number of pixels (at most 100000 either way)",
        )),
    }
}

fn numbers<const N: usize>(value: &Value, field: &str) -> Result<[i64; N], SpecError> {
    let items = value.as_array().filter(|items| items.len() == N);
    let parsed: Option<Vec<i64>> = items.and_then(|items| {
        items
            .iter()
            .map(|item| item.as_i64().filter(|number| number.abs() <= 100_000))
            .collect()
    });
    parsed
        .and_then(|parsed| <[i64; N]>::try_from(parsed).ok())
        .ok_or_else(|| SpecError::new(field, format!("give {N} whole numbers of pixels")))
}

fn drawing(value: &Value, field: &str) -> Result<Drawing, SpecError> {
    let map = object(value, field)?;
    let ink = match map.get("color") {
        None => Color([0, 0, 0]),
        Some(value) => color(value, &format!("{field}.color"))?,
    };
    if let Some(text) = map.get("text") {
        known_keys(map, field, &["text", "x", "y", "size", "color"])?;
        let text = bounded_text(text, &format!("{field}.text"), 2_000)?;
        if let Some(bad) = text
            .chars()
            .find(|c| *c != '\n' && super::image::glyph(*c).is_none())
        {
            return Err(SpecError::new(
                format!("{field}.text"),
                format!("`{bad}` has no glyph: text is printable Latin-1"),
            ));
        }
        let scale = match map.get("size") {
            None => 2,
            Some(size) => size
                .as_u64()
                .filter(|size| (1..=8).contains(size))
                .ok_or_else(|| {
                    SpecError::new(
                        format!("{field}.size"),
                        "give 1 to 8 (glyphs of 8 × size pixels)",
                    )
                })? as u32,
        };
        return Ok(Drawing::Text {
            x: coordinate(map, "x", field)?,
            y: coordinate(map, "y", field)?,
            text,
            scale,
            color: ink,
        });
    }
    if let Some(corners) = map.get("rectangle") {
        known_keys(map, field, &["rectangle", "color", "filled"])?;
        let [x, y, width, height] = numbers::<4>(corners, &format!("{field}.rectangle"))?;
        let filled = match map.get("filled") {
            None => true,
            Some(Value::Bool(filled)) => *filled,
            Some(_) => {
                return Err(SpecError::new(
                    format!("{field}.filled"),
                    "must be true or false",
                ));
            }
        };
        return Ok(Drawing::Rectangle {
            x,
            y,
            width,
            height,
            color: ink,
            filled,
        });
    }
    if let Some(ends) = map.get("line") {
        known_keys(map, field, &["line", "color"])?;
        let [x1, y1, x2, y2] = numbers::<4>(ends, &format!("{field}.line"))?;
        return Ok(Drawing::Line {
            from: (x1, y1),
            to: (x2, y2),
            color: ink,
        });
    }
    Err(SpecError::new(
        field,
        "draws nothing: give `text` (with x, y), `rectangle: [x, y, width, height]` or `line: [x1, y1, x2, y2]`",
    ))
}
