//! A page's text from its content stream, laid out the way pypdf's `extract_text` lays it out
//! (ClawEnvKit's `documents` service answers with pypdf): fragments join on one line until
//! the baseline moves by more than 0.8 of the text height, which starts a new line; a
//! horizontal gap wider than half a space (plus the width of what was shown) becomes a space;
//! a `TJ` offset of at least 0.95 half-space is a word gap. The text matrix is not advanced
//! by the glyphs shown, as in pypdf: their width is carried to the next positioning operator.

use std::collections::HashMap;

use super::document::{Document, Page};
use super::fonts::Font;
use super::syntax::{Dictionary, Lexer, Object};

type Matrix = [f64; 6];

const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

fn multiply(m: &Matrix, n: &Matrix) -> Matrix {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

/// The graphics state `q` saves and `Q` restores.
#[derive(Clone)]
struct Saved {
    cm: Matrix,
    font: Option<Vec<u8>>,
    font_size: f64,
    character_spacing: f64,
    leading: f64,
}

/// The reader's state while it walks one page's operators.
struct Reader<'a> {
    document: &'a Document,
    font_resources: Option<&'a Dictionary>,
    fonts: HashMap<Vec<u8>, Font>,
    fallback: Font,
    font: Option<Vec<u8>>,
    font_size: f64,
    /// Half the width of a space of the current font, in thousandths of the text size.
    half_space: f64,
    previous_font_space: Option<f64>,
    character_spacing: f64,
    leading: f64,
    cm: Matrix,
    tm: Matrix,
    cm_previous: Matrix,
    tm_previous: Matrix,
    /// Width shown since the last positioning operator, in text space × 1000.
    shown_width: f64,
    shown_height: f64,
    /// The baselines kept on the line being built: (axis, lowest, highest).
    line_span: Option<(usize, f64, f64)>,
    stack: Vec<Saved>,
    text: String,
    output: String,
    limit: usize,
}

/// The text of `page`, at most `limit` bytes of it.
pub(super) fn page_text(document: &Document, page: &Page, limit: usize) -> String {
    let font_resources = page
        .resources
        .get(b"Font")
        .and_then(|fonts| document.dictionary(fonts));
    let mut reader = Reader {
        document,
        font_resources,
        fonts: HashMap::new(),
        fallback: Font::fallback(),
        font: None,
        font_size: 12.0,
        half_space: 250.0,
        previous_font_space: None,
        character_spacing: 0.0,
        leading: 0.0,
        cm: IDENTITY,
        tm: IDENTITY,
        cm_previous: IDENTITY,
        tm_previous: IDENTITY,
        shown_width: 0.0,
        shown_height: 0.0,
        line_span: None,
        stack: Vec::new(),
        text: String::new(),
        output: String::new(),
        limit,
    };
    let mut lexer = Lexer::new(&page.content, 0);
    let mut operands: Vec<Object> = Vec::new();
    while let Some(object) = lexer.next_object() {
        match object {
            Object::Keyword(operator) => {
                if operator == b"BI" {
                    skip_inline_image(&page.content, &mut lexer);
                } else {
                    reader.operator(&operator, &operands);
                }
                operands.clear();
                if reader.output.len() + reader.text.len() > reader.limit {
                    break;
                }
            }
            // No operator takes more than a handful of operands; a run of thousands is junk.
            object if operands.len() < 64 => operands.push(object),
            _ => {}
        }
    }
    reader.output.push_str(&reader.text);
    let mut output = reader.output;
    if output.len() > limit {
        let mut cut = limit;
        while !output.is_char_boundary(cut) {
            cut -= 1;
        }
        output.truncate(cut);
    }
    output
}

/// Steps over an inline image's data: from `ID` to the `EI` that follows whitespace.
fn skip_inline_image(content: &[u8], lexer: &mut Lexer<'_>) {
    let start = lexer.position;
    let Some(data) = content
        .get(start..)
        .and_then(|rest| rest.windows(2).position(|window| window == b"ID"))
    else {
        lexer.position = content.len();
        return;
    };
    let data = start + data + 2;
    let end = content[data..]
        .windows(4)
        .position(|window| {
            window[0].is_ascii_whitespace()
                && &window[1..3] == b"EI"
                && window[3].is_ascii_whitespace()
        })
        .map_or(content.len(), |at| data + at + 3);
    lexer.position = end;
}

fn number(operands: &[Object], index: usize, default: f64) -> f64 {
    operands
        .get(index)
        .and_then(Object::number)
        .filter(|value| value.is_finite())
        .unwrap_or(default)
}

impl Reader<'_> {
    fn operator(&mut self, operator: &[u8], operands: &[Object]) {
        match operator {
            b"'" => {
                self.positioned(|reader| reader.next_line());
                self.show(operands.first());
            }
            b"\"" if operands.len() >= 3 => {
                self.character_spacing = number(operands, 1, 0.0);
                self.positioned(|reader| reader.next_line());
                self.show(operands.get(2));
            }
            b"TJ" => self.show_array(operands.first()),
            b"TD" if operands.len() >= 2 => {
                if let Some(ty) = operands[1].number() {
                    self.leading = -ty;
                }
                let (tx, ty) = (number(operands, 0, 0.0), number(operands, 1, 0.0));
                self.positioned(|reader| reader.move_by(tx, ty));
            }
            b"Td" => {
                let (tx, ty) = (number(operands, 0, 0.0), number(operands, 1, 0.0));
                self.positioned(|reader| reader.move_by(tx, ty));
            }
            b"Tm" => {
                let values: Vec<f64> = operands.iter().take(6).filter_map(Object::number).collect();
                let matrix = <[f64; 6]>::try_from(values.as_slice()).unwrap_or(IDENTITY);
                self.positioned(|reader| reader.tm = matrix);
            }
            b"T*" => self.positioned(|reader| reader.next_line()),
            b"Tj" => self.show(operands.first()),
            b"BT" => {
                self.tm = IDENTITY;
                self.flush();
            }
            b"ET" => self.flush(),
            b"q" => self.stack.push(Saved {
                cm: self.cm,
                font: self.font.clone(),
                font_size: self.font_size,
                character_spacing: self.character_spacing,
                leading: self.leading,
            }),
            b"Q" => {
                if self.stack.len() > 1024 {
                    self.stack.truncate(1024);
                }
                match self.stack.pop() {
                    Some(saved) => {
                        self.cm = saved.cm;
                        self.font = saved.font;
                        self.font_size = saved.font_size;
                        self.character_spacing = saved.character_spacing;
                        self.leading = saved.leading;
                    }
                    None => self.cm = IDENTITY,
                }
            }
            b"cm" => {
                self.output.push_str(&std::mem::take(&mut self.text));
                let values: Vec<f64> = operands.iter().take(6).filter_map(Object::number).collect();
                self.cm = <[f64; 6]>::try_from(values.as_slice())
                    .map(|matrix| multiply(&matrix, &self.cm))
                    .unwrap_or(IDENTITY);
            }
            b"Tc" => self.character_spacing = number(operands, 0, 0.0),
            b"TL" => self.leading = number(operands, 0, 0.0),
            b"Tf" => self.select_font(operands),
            b"Do" => {
                self.output.push_str(&std::mem::take(&mut self.text));
                if !self.output.is_empty() && !self.output.ends_with('\n') {
                    self.output.push('\n');
                }
            }
            _ => {}
        }
    }

    fn flush(&mut self) {
        self.output.push_str(&std::mem::take(&mut self.text));
    }

    fn move_by(&mut self, tx: f64, ty: f64) {
        self.tm[4] += tx * self.tm[0] + ty * self.tm[2];
        self.tm[5] += tx * self.tm[1] + ty * self.tm[3];
    }

    fn next_line(&mut self) {
        self.tm[4] -= self.leading * self.tm[2];
        self.tm[5] -= self.leading * self.tm[3];
    }

    /// A positioning operator: the move, then the line and gap check against the width shown
    /// since the last one.
    fn positioned(&mut self, apply: impl FnOnce(&mut Self)) {
        apply(self);
        let shown = self.shown_width / 1000.0;
        self.shown_width = 0.0;
        self.check_position(shown);
    }

    fn select_font(&mut self, operands: &[Object]) {
        if !self.text.is_empty() {
            self.previous_font_space = Some(self.font_size * self.half_space);
            self.output.push_str(&std::mem::take(&mut self.text));
        }
        let name = operands.first().and_then(Object::name).map(<[u8]>::to_vec);
        if let Some(name) = &name
            && !self.fonts.contains_key(name)
            && let Some(dictionary) = self
                .font_resources
                .and_then(|fonts| fonts.get(name))
                .and_then(|font| self.document.dictionary(font))
            && self.fonts.len() < 256
        {
            self.fonts
                .insert(name.clone(), Font::read(self.document, dictionary));
        }
        self.font = name.filter(|name| self.fonts.contains_key(name));
        self.half_space = self.current_font().space_width / 2.0;
        if let Some(size) = operands
            .get(1)
            .and_then(Object::number)
            .filter(|s| s.is_finite())
        {
            self.font_size = size;
        }
    }

    fn current_font(&self) -> &Font {
        self.font
            .as_ref()
            .and_then(|name| self.fonts.get(name))
            .unwrap_or(&self.fallback)
    }

    fn show(&mut self, operand: Option<&Object>) {
        let Some(Object::String(bytes)) = operand else {
            return;
        };
        let (decoded, width) = self.current_font().decode(bytes);
        self.append(&decoded, width);
    }

    fn append(&mut self, decoded: &str, width: f64) {
        self.previous_font_space = None;
        let count = decoded.chars().count() as f64;
        self.text.push_str(decoded);
        self.shown_width += width * self.font_size + 1000.0 * self.character_spacing * count;
        self.shown_height = self.font_size;
        self.check_position(0.0);
    }

    fn show_array(&mut self, operand: Option<&Object>) {
        let Some(Object::Array(items)) = operand else {
            return;
        };
        let gap = self.half_space * 0.95;
        for item in items {
            match item {
                Object::String(_) => self.show(Some(item)),
                item => {
                    let Some(offset) = item.number().filter(|value| value.is_finite()) else {
                        continue;
                    };
                    let width = self.shown_width - offset * self.font_size;
                    let previous = if self.text.is_empty() {
                        &self.output
                    } else {
                        &self.text
                    };
                    let after_word = previous
                        .chars()
                        .last()
                        .is_some_and(|c| c != ' ' && c != '\n');
                    if -offset >= gap && after_word {
                        let space = self.current_font().space_width;
                        self.append(" ", space);
                    }
                    self.shown_width = width;
                }
            }
        }
    }

    /// pypdf's line and word-gap rule for the move from the last position to this one.
    fn check_position(&mut self, shown: f64) {
        let previous = multiply(&self.tm_previous, &self.cm_previous);
        let current = multiply(&self.tm, &self.cm);
        let upright = current[3].abs() > 1e-6;
        let (moved_height, moved_width) = if upright {
            (current[5] - previous[5], current[4] - previous[4])
        } else {
            (current[4] - previous[4], current[5] - previous[5])
        };
        let scale_previous_x = previous[0].hypot(previous[1]);
        let scale_previous_y = previous[2].hypot(previous[3]);
        let scale_y = current[2].hypot(current[3]);
        let axis_index = if upright { 5 } else { 4 };
        let axis = current[axis_index];
        let distance = match self.line_span {
            Some((index, lower, upper)) if index == axis_index => {
                if (lower..=upper).contains(&axis) {
                    0.0
                } else {
                    (axis - lower).abs().min((axis - upper).abs())
                }
            }
            _ => moved_height.abs(),
        };
        let last = self
            .text
            .chars()
            .last()
            .or_else(|| self.output.chars().last());
        let threshold = 0.8 * (self.shown_height * scale_previous_y).min(self.font_size * scale_y);
        let space = match self.previous_font_space {
            Some(previous) => (self.font_size * self.half_space).min(previous),
            None => self.font_size * self.half_space,
        } / 1000.0;
        if distance > threshold {
            if !matches!(last, None | Some('\n')) {
                self.text.push('\n');
                self.output.push_str(&std::mem::take(&mut self.text));
            }
            self.line_span = Some((axis_index, axis, axis));
        } else {
            let other_baseline = moved_height.abs() > threshold;
            if (other_baseline || moved_width >= (space + shown) * scale_previous_x)
                && !matches!(last, None | Some(' '))
            {
                self.text.push(' ');
            }
            self.line_span = match self.line_span {
                Some((index, lower, upper))
                    if index == axis_index && !matches!(last, None | Some('\n')) =>
                {
                    Some((axis_index, lower.min(axis), upper.max(axis)))
                }
                _ => Some((axis_index, axis, axis)),
            };
        }
        self.tm_previous = self.tm;
        self.cm_previous = self.cm;
    }
}
