//! A variant written like its source: the source's task.yaml text edited value by value, not
//! the variant serialised anew, so its key order, flow style, quoting, comments and unknown
//! keys stay as the author wrote them and a `diff` against the source touches only the values
//! that changed. The located tree of the text (the loader's `Node`, with spans) is walked
//! beside the task's document before and after the perturbation; where they differ, the
//! scalar's text is replaced, written in its own style when that reads back as the new value
//! (the same replacements applied to its text, or the value written plain, in its quotes or its
//! block), else double-quoted. The fixtures' lists are rebuilt from their items' texts in the
//! order the draw put them ([`Shape`]), distractor records written as their template record is.
//! Whatever cannot be edited this way is an error naming where, never a silent re-serialisation.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::text::Replacements;
use crate::task::raw::Node;

/// Where each item of the fixtures' lists came from: the index of its source item (a
/// distractor, the index of the record it was made from), and the same for the lists inside it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Shape {
    /// A scalar.
    Leaf,
    /// A list's items, in their new order: (source index, the item's own shape).
    List(Vec<(usize, Shape)>),
    /// A map's values by key.
    Map(BTreeMap<String, Shape>),
}

impl Shape {
    /// The shape of `value` untouched: every item where it was.
    pub(super) fn of(value: &Value) -> Shape {
        match value {
            Value::Array(items) => Shape::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| (index, Shape::of(item)))
                    .collect(),
            ),
            Value::Object(map) => Shape::Map(
                map.iter()
                    .map(|(key, item)| (key.clone(), Shape::of(item)))
                    .collect(),
            ),
            _ => Shape::Leaf,
        }
    }
}

/// What the draw did to text, so that a scalar can be edited as the value was: the whole-token
/// replacements, and the opening line put before the prompt.
pub(super) struct Hints<'a> {
    pub(super) replacements: &'a Replacements,
    pub(super) opening: Option<&'a str>,
}

/// The stack the edit runs with: the YAML reader recurses once per nesting level, and a task
/// may nest as deep as the loader allows (`task::MAX_DEPTH`), which it reads with as much.
const STACK: usize = 16 * 1024 * 1024;

/// `source` (the text `before` was loaded from) edited so that it loads as `after`; `fixtures`
/// says where the items of the fixtures' lists came from.
pub(super) fn rewrite(
    source: &str,
    before: &Value,
    after: &Value,
    fixtures: &Shape,
    hints: &Hints<'_>,
) -> Result<String, String> {
    std::thread::scope(|scope| {
        let edit = || rewrite_here(source, before, after, fixtures, hints);
        match std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(scope, edit)
        {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(error) => Err(format!("cannot start a thread to edit the source: {error}")),
        }
    })
}

fn rewrite_here(
    source: &str,
    before: &Value,
    after: &Value,
    fixtures: &Shape,
    hints: &Hints<'_>,
) -> Result<String, String> {
    let root: Spanned<Node> = crate::task::read::yaml(source)
        .map_err(|problem| format!("the source cannot be read again: {}", problem.message))?;
    let editor = Editor { source, hints };
    let mut edits = Vec::new();
    let place = Place {
        path: String::new(),
        shape: None,
        flow: false,
        fixtures,
    };
    editor.edits(&root, before, after, &place, &mut edits)?;
    apply(source, 0, edits)
}

/// Where a node is: its path for errors, the shape of its fixtures' lists (under `fixtures`),
/// whether it is inside a flow collection.
#[derive(Clone)]
struct Place<'a> {
    path: String,
    shape: Option<&'a Shape>,
    flow: bool,
    fixtures: &'a Shape,
}

impl<'a> Place<'a> {
    fn key(&self, key: &str) -> Place<'a> {
        let shape = match (self.path.is_empty(), key == "fixtures", self.shape) {
            (true, true, _) => Some(self.fixtures),
            (_, _, Some(Shape::Map(children))) => children.get(key),
            _ => None,
        };
        Place {
            path: match self.path.is_empty() {
                true => key.to_owned(),
                false => format!("{}.{key}", self.path),
            },
            shape,
            flow: self.flow,
            fixtures: self.fixtures,
        }
    }

    fn item(&self, index: usize, shape: Option<&'a Shape>) -> Place<'a> {
        Place {
            path: format!("{}[{index}]", self.path),
            shape,
            flow: self.flow,
            fixtures: self.fixtures,
        }
    }
}

/// How a scalar is written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style<'a> {
    Plain,
    Single,
    Double,
    /// A `|` or `>` block, with its header (`|`, `>-`, `|2`).
    Block(&'a str),
}

struct Editor<'a> {
    source: &'a str,
    hints: &'a Hints<'a>,
}

impl Editor<'_> {
    /// The edits that make `node` (whose value is `before`) read as `after`.
    fn edits(
        &self,
        node: &Spanned<Node>,
        before: &Value,
        after: &Value,
        place: &Place<'_>,
        out: &mut Vec<(Range<usize>, String)>,
    ) -> Result<(), String> {
        if before == after {
            return Ok(());
        }
        // An alias (`*maria`) is edited where its anchor is: each use asks for the same edit,
        // made once; uses that would need different values are refused as overlapping edits.
        let place = &Place {
            path: place.path.clone(),
            flow: place.flow || self.is_flow(node),
            ..*place
        };
        match &node.value {
            Node::Scalar(_) => {
                let range = self.extent(node)?;
                let text = self.scalar(range.clone(), after, place)?;
                out.push((range, text));
                Ok(())
            }
            Node::Map(entries) => self.map(entries, before, after, place, out),
            Node::List(items) => self.list(items, before, after, place, out),
        }
    }

    fn map(
        &self,
        entries: &[(Spanned<String>, Spanned<Node>)],
        before: &Value,
        after: &Value,
        place: &Place<'_>,
        out: &mut Vec<(Range<usize>, String)>,
    ) -> Result<(), String> {
        let (Some(old), Some(new)) = (before.as_object(), after.as_object()) else {
            return Err(format!("`{}` is no longer a map", place.path));
        };
        for (key, value) in entries {
            // A key the document does not have (unknown, or another spelling) is left as it is.
            if let (Some(old), Some(new)) = (old.get(&key.value), new.get(&key.value)) {
                self.edits(value, old, new, &place.key(&key.value), out)?;
            }
        }
        for (key, value) in new {
            let written = entries.iter().any(|(name, _)| name.value == *key);
            if !written && old.get(key) != Some(value) {
                return Err(format!(
                    "`{}` changes, and the source does not write it",
                    place.key(key).path
                ));
            }
        }
        Ok(())
    }

    fn list(
        &self,
        items: &[Spanned<Node>],
        before: &Value,
        after: &Value,
        place: &Place<'_>,
        out: &mut Vec<(Range<usize>, String)>,
    ) -> Result<(), String> {
        let (Some(old), Some(new)) = (before.as_array(), after.as_array()) else {
            return Err(format!("`{}` is no longer a list", place.path));
        };
        let origins: Vec<(usize, Option<&Shape>)> = match place.shape {
            Some(Shape::List(entries)) => entries
                .iter()
                .map(|(origin, shape)| (*origin, Some(shape)))
                .collect(),
            _ => (0..new.len()).map(|index| (index, None)).collect(),
        };
        let fits = origins.len() == new.len()
            && items.len() == old.len()
            && new.len() >= old.len()
            && origins.iter().all(|(origin, _)| *origin < old.len());
        if !fits {
            return Err(format!(
                "`{}` changed its length or order untracked",
                place.path
            ));
        }
        let in_place = new.len() == old.len()
            && origins
                .iter()
                .enumerate()
                .all(|(index, (origin, _))| index == *origin);
        if in_place {
            for (index, (item, (_, shape))) in items.iter().zip(&origins).enumerate() {
                let place = place.item(index, *shape);
                self.edits(item, &old[index], &new[index], &place, out)?;
            }
            return Ok(());
        }
        self.reordered(items, old, new, &origins, place, out)
    }

    /// A list whose items moved or were added: each slot given the text of the item now there
    /// (made from its source item's text), the added items written after the last, as it is.
    fn reordered(
        &self,
        items: &[Spanned<Node>],
        old: &[Value],
        new: &[Value],
        origins: &[(usize, Option<&Shape>)],
        place: &Place<'_>,
        out: &mut Vec<(Range<usize>, String)>,
    ) -> Result<(), String> {
        let flow = place.flow;
        if !flow && !self.same_column(items) {
            return Err(format!(
                "`{}`'s items do not start at one column",
                place.path
            ));
        }
        let mut texts = Vec::with_capacity(new.len());
        for (index, (origin, shape)) in origins.iter().enumerate() {
            let place = place.item(index, *shape);
            texts.push(self.text(&items[*origin], &old[*origin], &new[index], &place)?);
        }
        let mut extras = String::new();
        for (index, text) in texts.into_iter().enumerate() {
            match items.get(index) {
                Some(item) => {
                    let range = self.extent(item)?;
                    if self.source[range.clone()] != text {
                        out.push((range, text));
                    }
                }
                None => {
                    let separator = match flow {
                        true => ", ".to_owned(),
                        false => format!("\n{}", self.dash(items, &place.path)?),
                    };
                    extras.push_str(&separator);
                    extras.push_str(&text);
                }
            }
        }
        if !extras.is_empty() {
            let last = items
                .last()
                .ok_or_else(|| format!("`{}` is empty", place.path))?;
            let end = self.extent(last)?.end;
            out.push((end..end, extras));
        }
        Ok(())
    }

    /// The text of `node` made to read as `after`.
    fn text(
        &self,
        node: &Spanned<Node>,
        before: &Value,
        after: &Value,
        place: &Place<'_>,
    ) -> Result<String, String> {
        let range = self.extent(node)?;
        let mut edits = Vec::new();
        self.edits(node, before, after, place, &mut edits)?;
        apply(&self.source[range.clone()], range.start, edits)
    }

    /// A scalar's new text: in its own style when that reads back as `after`, else quoted.
    fn scalar(
        &self,
        range: Range<usize>,
        after: &Value,
        place: &Place<'_>,
    ) -> Result<String, String> {
        let raw = &self.source[range.clone()];
        let style = self.style(range.start);
        let mut candidates = Vec::new();
        match after {
            Value::String(text) => {
                let replaced = self.hints.replacements.apply(raw);
                if let Some(opening) = self.hints.opening {
                    candidates.push(prefixed(&replaced, style, opening));
                }
                candidates.push(replaced);
                match style {
                    Style::Plain => candidates.push(text.clone()),
                    Style::Single if !text.contains('\n') => {
                        candidates.push(format!("'{}'", text.replace('\'', "''")));
                    }
                    _ => {}
                }
                if !matches!(style, Style::Block(_)) {
                    candidates.push(Value::from(text.as_str()).to_string());
                }
            }
            other => candidates.push(other.to_string()),
        }
        candidates
            .into_iter()
            .find(|candidate| {
                self.reads_as(candidate, style, place.flow, range.start)
                    .as_ref()
                    == Some(after)
            })
            .ok_or_else(|| format!("`{}` cannot be written in its place", place.path))
    }

    /// What `candidate`, written where the scalar at `start` is, reads as.
    fn reads_as(
        &self,
        candidate: &str,
        style: Style<'_>,
        flow: bool,
        start: usize,
    ) -> Option<Value> {
        let fragment = match style {
            Style::Block(header) => {
                format!(
                    "k: {header}\n{}{candidate}\n",
                    " ".repeat(self.column(start))
                )
            }
            _ if flow => format!("k: [{candidate}]\n"),
            _ => format!("k: {candidate}\n"),
        };
        let mut value: Value = crate::task::read::yaml(&fragment).ok()?;
        let value = value.get_mut("k")?.take();
        match (style, flow) {
            (Style::Block(_), _) | (_, false) => Some(value),
            (_, true) => match value {
                Value::Array(mut items) if items.len() == 1 => Some(items.remove(0)),
                _ => None,
            },
        }
    }

    fn is_flow(&self, node: &Spanned<Node>) -> bool {
        !matches!(node.value, Node::Scalar(_))
            && self
                .start(node)
                .is_ok_and(|start| matches!(self.source.as_bytes().get(start), Some(b'[' | b'{')))
    }

    fn start(&self, node: &Spanned<Node>) -> Result<usize, String> {
        let offset = node
            .defined
            .span()
            .byte_offset()
            .map(|offset| offset as usize);
        offset
            .filter(|offset| self.source.is_char_boundary(*offset))
            .ok_or_else(|| "a value of the source has no place in its text".to_owned())
    }

    /// Where `node`'s text is: a scalar's span (a block's without its trailing line breaks);
    /// a collection from its start to its last value's end, or its closing bracket.
    fn extent(&self, node: &Spanned<Node>) -> Result<Range<usize>, String> {
        let start = self.start(node)?;
        let end = match &node.value {
            Node::Scalar(_) => {
                let length = node.defined.span().byte_len().unwrap_or(0) as usize;
                let end = (start + length).min(self.source.len());
                if !self.source.is_char_boundary(end) {
                    return Err("a value of the source has no place in its text".into());
                }
                start + self.source[start..end].trim_end().len()
            }
            Node::List(items) => self.last_end(start, items.iter())?,
            Node::Map(entries) => self.last_end(start, entries.iter().map(|(_, value)| value))?,
        };
        if !self.is_flow(node) {
            return Ok(start..end);
        }
        // A flow collection ends at its bracket, after commas, spaces and comments.
        let bytes = self.source.as_bytes();
        let mut at = end.max(start + 1);
        while let Some(byte) = bytes.get(at) {
            match byte {
                b']' | b'}' => return Ok(start..at + 1),
                b'#' => {
                    at = self.source[at..]
                        .find('\n')
                        .map_or(bytes.len(), |line| at + line);
                }
                byte if byte.is_ascii_whitespace() || *byte == b',' => at += 1,
                _ => break,
            }
        }
        Err("a flow collection of the source has no closing bracket".into())
    }

    fn last_end<'n>(
        &self,
        start: usize,
        values: impl Iterator<Item = &'n Spanned<Node>>,
    ) -> Result<usize, String> {
        let mut end = start;
        for value in values {
            end = end.max(self.extent(value)?.end);
        }
        Ok(end)
    }

    fn style(&self, start: usize) -> Style<'_> {
        match self.source.as_bytes().get(start) {
            Some(b'"') => Style::Double,
            Some(b'\'') => Style::Single,
            _ => self.block_header(start).map_or(Style::Plain, Style::Block),
        }
    }

    /// The header of the block scalar whose content starts at `start`, if it is one: the last
    /// word of the line before, when the content starts its own line.
    fn block_header(&self, start: usize) -> Option<&str> {
        let line = self.source[..start].rfind('\n')? + 1;
        if !self.source[line..start].bytes().all(|byte| byte == b' ') {
            return None;
        }
        let previous = self.source[..line].trim_end().rsplit('\n').next()?;
        let previous = previous.split(" #").next()?.trim_end();
        let word = previous.rsplit(' ').next()?;
        let indicators = word.get(1..)?;
        (word.starts_with(['|', '>'])
            && indicators
                .chars()
                .all(|c| matches!(c, '-' | '+') || c.is_ascii_digit()))
        .then_some(word)
    }

    /// Spaces between the line's start and `start`.
    fn column(&self, start: usize) -> usize {
        start - self.source[..start].rfind('\n').map_or(0, |line| line + 1)
    }

    fn same_column(&self, items: &[Spanned<Node>]) -> bool {
        let columns: Vec<Option<usize>> = items
            .iter()
            .map(|item| self.start(item).ok().map(|start| self.column(start)))
            .collect();
        columns.first().is_some_and(Option::is_some)
            && columns.windows(2).all(|pair| pair[0] == pair[1])
    }

    /// What opens a new item of a block list: its last item's `- `, with its indentation.
    fn dash(&self, items: &[Spanned<Node>], path: &str) -> Result<String, String> {
        let last = items.last().ok_or_else(|| format!("`{path}` is empty"))?;
        let start = self.start(last)?;
        let line = self.source[..start].rfind('\n').map_or(0, |line| line + 1);
        let opening = &self.source[line..start];
        let trimmed = opening.trim_start_matches(' ');
        let dash = trimmed
            .strip_prefix('-')
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|byte| byte == b' '));
        match dash {
            true => Ok(opening.to_owned()),
            false => Err(format!("`{path}`'s items are not one to a line")),
        }
    }
}

/// `raw` (a scalar's text in `style`) with `opening` and a space before its content.
fn prefixed(raw: &str, style: Style<'_>, opening: &str) -> String {
    match style {
        Style::Single => format!("'{} {}", opening.replace('\'', "''"), &raw[1..]),
        Style::Double => {
            let quoted = Value::from(opening).to_string();
            format!("{} {}", &quoted[..quoted.len() - 1], &raw[1..])
        }
        Style::Plain | Style::Block(_) => format!("{opening} {raw}"),
    }
}

/// `text` (which starts at `offset` in the source) with `edits` (source ranges) applied.
fn apply(
    text: &str,
    offset: usize,
    mut edits: Vec<(Range<usize>, String)>,
) -> Result<String, String> {
    edits.sort_by(|(a, x), (b, y)| (a.start, a.end, x).cmp(&(b.start, b.end, y)));
    edits.dedup();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, replacement) in edits {
        let start = range.start.checked_sub(offset);
        let end = range.end.checked_sub(offset);
        let (Some(start), Some(end)) = (start, end) else {
            return Err("an edit lies outside its value".into());
        };
        if start < at
            || end > text.len()
            || !text.is_char_boundary(start)
            || !text.is_char_boundary(end)
        {
            return Err("two edits of the source overlap".into());
        }
        out.push_str(&text[at..start]);
        out.push_str(&replacement);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}
