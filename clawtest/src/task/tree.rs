//! The typed form of a task read from its located tree, so that the YAML text is parsed once.
//!
//! [`super::parse`] needs the text as a located [`Node`] tree (unknown keys, the shape check,
//! where an empty field was written) and as a [`super::raw::RawTask`]. Parsing the text twice
//! was a quarter of the time `cargo clawtest validate` spent on a file; this module is a serde
//! `Deserializer` over the tree instead, so the derived `RawTask` reads from memory.
//!
//! `Spanned<T>` fields keep their locations: serde-saphyr's `Spanned` asks its deserializer for
//! a newtype struct with a private marker name and then reads a map `{marker, value,
//! referenced, defined}`; this deserializer answers that request from the tree's own
//! locations. A unit test compares every field against a direct parse, so a change of that
//! protocol in a new serde-saphyr fails loudly instead of losing locations.

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::Value;
use serde_saphyr::{Location, Spanned};

use super::error::{Position, Problem};
use super::raw::Node;

/// The newtype name serde-saphyr's `Spanned<T>` asks its deserializer for.
const SPANNED_NAME: &str = "__yaml_spanned";
/// The first key of the located map, which tells it from a map the user wrote.
const SPANNED_MARKER: &str = "__serde_saphyr_private_spanned";

/// Reads `T` from the located tree of `source` (the text the tree was parsed from, used to
/// give a number or boolean written where text is expected its written form, as a direct
/// parse does).
pub(crate) fn from_tree<T: DeserializeOwned>(
    root: &Spanned<Node>,
    source: &str,
) -> Result<T, Box<Problem>> {
    T::deserialize(Item {
        located: Located::Node(root),
        source,
    })
    .map_err(|error| Box::new(error.into_problem()))
}

/// Why the tree does not fit the type, and where.
#[derive(Debug)]
pub(crate) struct TreeError {
    message: String,
    location: Option<Location>,
}

impl TreeError {
    /// The innermost location wins: it is the value that did not fit.
    fn at(mut self, location: Location) -> TreeError {
        if self.location.is_none() && location != Location::UNKNOWN {
            self.location = Some(location);
        }
        self
    }

    fn into_problem(self) -> Problem {
        Problem::new(
            "(document)",
            self.message,
            self.location.and_then(Position::from_location),
        )
    }
}

impl fmt::Display for TreeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for TreeError {}

impl de::Error for TreeError {
    fn custom<T: fmt::Display>(message: T) -> TreeError {
        TreeError {
            message: message.to_string(),
            location: None,
        }
    }
}

/// A value of the tree: a node, or a map key (text with its own location).
#[derive(Clone, Copy)]
enum Located<'a> {
    Node(&'a Spanned<Node>),
    Key(&'a Spanned<String>),
}

impl Located<'_> {
    fn referenced(self) -> Location {
        match self {
            Located::Node(node) => node.referenced,
            Located::Key(key) => key.referenced,
        }
    }

    fn defined(self) -> Location {
        match self {
            Located::Node(node) => node.defined,
            Located::Key(key) => key.defined,
        }
    }
}

/// The deserializer for one value of the tree.
#[derive(Clone, Copy)]
struct Item<'a> {
    located: Located<'a>,
    source: &'a str,
}

impl Item<'_> {
    /// A scalar as the text it was written as: `task_id: 7` reads as "7", as serde-saphyr
    /// reads a plain scalar into a string field.
    fn written_text(&self, value: &Value) -> String {
        let written = Position::from_location(self.located.referenced())
            .and_then(|position| position.span)
            .and_then(|(start, length)| self.source.get(start..start.checked_add(length)?));
        match written {
            Some(text) if !text.trim().is_empty() => text.trim().to_string(),
            _ => value.to_string(),
        }
    }
}

impl<'de> Deserializer<'de> for Item<'_> {
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        let source = self.source;
        let result = match self.located {
            Located::Key(key) => visitor.visit_str(&key.value),
            Located::Node(node) => match &node.value {
                Node::Scalar(Value::Null) => visitor.visit_unit(),
                Node::Scalar(Value::Bool(value)) => visitor.visit_bool(*value),
                Node::Scalar(Value::Number(number)) => {
                    if let Some(value) = number.as_u64() {
                        visitor.visit_u64(value)
                    } else if let Some(value) = number.as_i64() {
                        visitor.visit_i64(value)
                    } else {
                        visitor.visit_f64(number.as_f64().unwrap_or(f64::NAN))
                    }
                }
                Node::Scalar(Value::String(text)) => visitor.visit_str(text),
                // The tree holds only JSON scalars; a collection here is not a scalar.
                Node::Scalar(other) => visitor.visit_str(&other.to_string()),
                Node::List(items) => visitor.visit_seq(Items {
                    items: items.iter(),
                    source,
                }),
                Node::Map(entries) => visitor.visit_map(Entries {
                    entries: entries.iter(),
                    value: None,
                    source,
                }),
            },
        };
        result.map_err(|error| error.at(self.located.referenced()))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        match self.located {
            Located::Node(Spanned {
                value: Node::Scalar(Value::Null),
                ..
            }) => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        if name == SPANNED_NAME {
            visitor.visit_newtype_struct(SpannedForm { item: self })
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    /// Text without a document reads as a map with no keys, as serde-saphyr reads it: an empty
    /// task file is a task with every field missing. A null that is written (`~`, `---` with
    /// nothing after it) is not a map.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        match self.located {
            Located::Node(
                node @ Spanned {
                    value: Node::Scalar(Value::Null),
                    ..
                },
            ) if node.referenced.span().is_empty() && reads_as_an_empty_map(self.source) => visitor
                .visit_map(Entries {
                    entries: [].iter(),
                    value: None,
                    source: self.source,
                })
                .map_err(|error: TreeError| error.at(node.referenced)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        match self.located {
            Located::Node(Spanned {
                value: Node::Scalar(value @ (Value::Number(_) | Value::Bool(_))),
                ..
            }) => visitor
                .visit_string(self.written_text(value))
                .map_err(|error: TreeError| error.at(self.located.referenced())),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        self.deserialize_str(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit
        unit_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Whether serde-saphyr reads the text as a map with no keys although its root is null: a
/// stream with only comments, blank lines, byte order marks or `...` (while `---` alone
/// starts a document, whose value is a null that is not a map). The parser is the only exact
/// judge; this runs only for a root that is null and was not written, so a task never pays.
fn reads_as_an_empty_map(source: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Nothing {}

    serde_saphyr::from_str_with_options::<Nothing>(source, super::read::options()).is_ok()
}

/// The elements of a list.
struct Items<'a> {
    items: std::slice::Iter<'a, Spanned<Node>>,
    source: &'a str,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = TreeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TreeError> {
        match self.items.next() {
            Some(node) => seed
                .deserialize(Item {
                    located: Located::Node(node),
                    source: self.source,
                })
                .map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of a map, in document order.
struct Entries<'a> {
    entries: std::slice::Iter<'a, (Spanned<String>, Spanned<Node>)>,
    value: Option<&'a Spanned<Node>>,
    source: &'a str,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = TreeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TreeError> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(Item {
                    located: Located::Key(key),
                    source: self.source,
                })
                .map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TreeError> {
        match self.value.take() {
            Some(node) => seed.deserialize(Item {
                located: Located::Node(node),
                source: self.source,
            }),
            None => Err(de::Error::custom(
                "a map value was asked for before its key",
            )),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A value as serde-saphyr's `Spanned<T>` reads it: `{marker, value, referenced, defined}`.
struct SpannedForm<'a> {
    item: Item<'a>,
}

impl<'de> Deserializer<'de> for SpannedForm<'_> {
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        visitor.visit_map(SpannedFields {
            item: self.item,
            next: 0,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// The four entries of the located form, in the order `Spanned<T>` expects the marker first.
struct SpannedFields<'a> {
    item: Item<'a>,
    next: usize,
}

const SPANNED_KEYS: [&str; 4] = [SPANNED_MARKER, "value", "referenced", "defined"];

impl<'de> MapAccess<'de> for SpannedFields<'_> {
    type Error = TreeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TreeError> {
        key_at(&SPANNED_KEYS, self.next, seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TreeError> {
        let index = self.next;
        self.next += 1;
        match index {
            0 => seed.deserialize(de::value::UnitDeserializer::new()),
            1 => seed.deserialize(self.item),
            2 => seed.deserialize(LocationForm(self.item.located.referenced())),
            _ => seed.deserialize(LocationForm(self.item.located.defined())),
        }
    }
}

/// The `index`th of a located form's fixed keys, or the end of the map.
fn key_at<'de, K: DeserializeSeed<'de>>(
    keys: &[&'static str],
    index: usize,
    seed: K,
) -> Result<Option<K::Value>, TreeError> {
    keys.get(index)
        .map(|key| seed.deserialize(de::value::BorrowedStrDeserializer::new(key)))
        .transpose()
}

/// A `Location` as its `Deserialize` reads it: `{line, column, span, source_id}`.
struct LocationForm(Location);

impl<'de> Deserializer<'de> for LocationForm {
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        let location = self.0;
        let span = location.span();
        // Unknown byte offsets are written as serde-saphyr's own "unavailable" marker.
        let unavailable = u64::from(u32::MAX);
        let numbers = [
            location.line(),
            location.column(),
            u64::from(location.source_id()),
            span.offset(),
            span.len(),
            span.byte_offset().unwrap_or(unavailable),
            span.byte_len().unwrap_or(unavailable),
        ];
        visitor.visit_map(LocationFields { numbers, next: 0 })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// `line`, `column`, `source_id`, then `span` as `{offset, len, byte_info: [offset, len]}`.
struct LocationFields {
    numbers: [u64; 7],
    next: usize,
}

const LOCATION_KEYS: [&str; 4] = ["line", "column", "source_id", "span"];

impl<'de> MapAccess<'de> for LocationFields {
    type Error = TreeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TreeError> {
        key_at(&LOCATION_KEYS, self.next, seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TreeError> {
        let index = self.next;
        self.next += 1;
        match index {
            0..=2 => seed.deserialize(de::value::U64Deserializer::new(self.numbers[index])),
            _ => {
                let [.., offset, len, byte_offset, byte_len] = self.numbers;
                let byte_info =
                    de::value::SeqDeserializer::new([byte_offset, byte_len].into_iter());
                let span = [
                    ("offset", SpanPart::Number(offset)),
                    ("len", SpanPart::Number(len)),
                    ("byte_info", SpanPart::Pair(byte_info)),
                ];
                seed.deserialize(de::value::MapDeserializer::new(span.into_iter()))
            }
        }
    }
}

type Pair = de::value::SeqDeserializer<std::array::IntoIter<u64, 2>, TreeError>;

/// A value of a `Span`: a number, or the pair of byte offset and length.
enum SpanPart {
    Number(u64),
    Pair(Pair),
}

impl<'de> de::IntoDeserializer<'de, TreeError> for SpanPart {
    type Deserializer = SpanPart;

    fn into_deserializer(self) -> SpanPart {
        self
    }
}

impl<'de> Deserializer<'de> for SpanPart {
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        match self {
            SpanPart::Number(number) => visitor.visit_u64(number),
            SpanPart::Pair(pair) => pair.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::raw::RawTask;
    use crate::task::read;

    /// Everything read through the tree equals what a direct parse of the text reads,
    /// locations included, and a file one cannot read the other cannot either: the valid and
    /// invalid corpora, the demo and the templates.
    #[test]
    fn reading_through_the_tree_equals_reading_the_text() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for folder in [
            "tests/fixtures/valid",
            "tests/fixtures/invalid",
            "tests/fixtures/warnings",
            "../examples/demo/tasks",
            "../templates",
        ] {
            collect_yaml(&root.join(folder), &mut files);
        }
        let mut compared = 0;
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue; // The invalid corpus holds bytes that are not UTF-8.
            };
            let Ok(tree) = read::yaml::<Spanned<Node>>(&text) else {
                continue; // Not YAML: nothing to read through.
            };
            if tree.value.entry("task_id").is_none() && tree.value.entry("prompt").is_none() {
                continue; // A cassette or a workflow, not a task.
            }
            let direct = read::yaml::<RawTask>(&text).map(|task| format!("{task:#?}"));
            let through_tree = from_tree::<RawTask>(&tree, &text).map(|task| format!("{task:#?}"));
            match (direct, through_tree) {
                (Ok(direct), Ok(through_tree)) => assert_eq!(
                    through_tree,
                    direct,
                    "{} reads differently through the tree",
                    file.display()
                ),
                (Err(_), Err(_)) => {}
                (direct, through_tree) => panic!(
                    "{}: a direct parse gives {direct:?}, the tree {through_tree:?}",
                    file.display()
                ),
            }
            compared += 1;
        }
        assert!(
            compared >= 100,
            "the corpora are found: {compared} of {files:?}"
        );
    }

    fn collect_yaml(folder: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(folder) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                collect_yaml(&path, files);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "yaml")
            {
                files.push(path);
            }
        }
    }

    #[test]
    fn scalars_written_where_text_is_expected_read_as_written() {
        let text = "task_id: 007\ntask_name: true\nprompt: 1e3\nlimits: {max_turns: 4}\n";
        let tree: Spanned<Node> = read::yaml(text).expect("valid YAML");
        let task: RawTask = from_tree(&tree, text).expect("a task");
        let direct: RawTask = read::yaml(text).expect("a task");
        assert_eq!(format!("{task:?}"), format!("{direct:?}"));
        assert_eq!(task.task_id.expect("present").value, "007");
        assert_eq!(task.prompt.expect("present").value, "1e3");
    }

    /// Inputs where the two readings once differed (found by the `typed_from_tree` fuzz target).
    #[test]
    fn inputs_that_once_read_differently_now_agree() {
        for text in [
            "",
            "~\n",
            "# only a comment\n",
            "---\n",
            "...\n",
            "... # end\n...\n",
            " \r\r\u{feff}\r\r",
            "null",
            "limits: ~\n",
            "fixtures: {tasks: [{0x1F: a, 1.0: b, true: c, 007: d}]}\n",
        ] {
            let (direct, through_tree) = crate::task::typed_both_ways(text).expect("YAML");
            // Both read the same task, or both refuse (each in its own words).
            match (&direct, &through_tree) {
                (Ok(direct), Ok(through_tree)) => assert_eq!(through_tree, direct, "{text:?}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{text:?}: direct {direct:?}, through the tree {through_tree:?}"),
            }
        }
        // A null map key reads as the text "null" (as PyYAML and then JSON make it), where a
        // direct parse refuses it as a field name; validation then finds the tool incomplete.
        let text = "tools:\n  - {name: update_task,: /todo/tasks/update}\n";
        let (direct, through_tree) = crate::task::typed_both_ways(text).expect("YAML");
        assert!(direct.is_err(), "{direct:?}");
        let through_tree = through_tree.expect("read through the tree");
        assert!(through_tree.contains("update_task"), "{through_tree}");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_located() {
        let text = "task_id: t\nlimits:\n  max_turns: [1, 2]\n";
        let tree: Spanned<Node> = read::yaml(text).expect("valid YAML");
        let problem = from_tree::<RawTask>(&tree, text).expect_err("a list is not a number");
        assert_eq!(problem.position.map(|position| position.line), Some(3));
        assert!(
            problem.message.contains("invalid type"),
            "{}",
            problem.message
        );
    }
}
