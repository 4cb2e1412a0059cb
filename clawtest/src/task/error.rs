//! What can be wrong with a task file, located: every problem names the file, the line and
//! column, the field (as a path such as `scoring_components[2].check.type`), what was
//! expected, and where it can, what to write instead.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceSpan};
use serde_saphyr::Location;

/// Where in a task file a value was written. Lines and columns are 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The line, from 1.
    pub line: u64,
    /// The column of the value's first character, from 1.
    pub column: u64,
    /// Byte offset and length in the source, when the parser knows them (for miette labels).
    pub span: Option<(usize, usize)>,
}

impl Position {
    /// The start of the file, for what is missing from the whole document.
    pub(crate) const START: Position = Position {
        line: 1,
        column: 1,
        span: Some((0, 0)),
    };

    /// The position serde-saphyr recorded, if it recorded one.
    pub(crate) fn from_location(location: Location) -> Option<Position> {
        if location == Location::UNKNOWN {
            return None;
        }
        let span = location.span();
        let bytes = span
            .byte_offset()
            .map(|offset| (offset as usize, span.byte_len().unwrap_or(0) as usize));
        Some(Position {
            line: location.line(),
            column: location.column(),
            span: bytes,
        })
    }
}

/// One problem in a task file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic)]
#[error("{field}: {message}")]
pub struct Problem {
    /// The field, as a path from the document root.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
    /// What to write instead, when known.
    #[help]
    pub help: Option<String>,
    /// Where in the file it was written; `None` for what concerns the file as a whole (it
    /// could not be read) or a value whose place is not known.
    pub position: Option<Position>,
    #[label("here")]
    label: Option<SourceSpan>,
    /// Another place the problem involves, with what it is (the safety check that a
    /// contradicted scoring check collides with): a secondary label.
    pub secondary: Option<(String, Position)>,
    #[label(collection)]
    secondary_labels: Vec<LabeledSpan>,
}

impl Problem {
    /// A problem with `field` (a path from the document root, or `(file)`), located at
    /// `position` when known, without help.
    pub(crate) fn new(
        field: impl Into<String>,
        message: impl Into<String>,
        position: Option<Position>,
    ) -> Problem {
        let label = position
            .and_then(|position| position.span)
            .map(|(offset, length)| SourceSpan::from((offset, length.max(1))));
        Problem {
            field: field.into(),
            message: message.into(),
            help: None,
            position,
            label,
            secondary: None,
            secondary_labels: Vec::new(),
        }
    }

    /// This problem with a secondary label `note` at `position` (when known).
    pub(crate) fn with_secondary(
        mut self,
        note: impl Into<String>,
        position: Option<Position>,
    ) -> Problem {
        let Some(position) = position else {
            return self;
        };
        let note = note.into();
        if let Some((offset, length)) = position.span {
            self.secondary_labels =
                vec![LabeledSpan::new(Some(note.clone()), offset, length.max(1))];
        }
        self.secondary = Some((note, position));
        self
    }

    /// Gives a problem located by line and column only (the YAML parser's own errors carry no
    /// byte offset) the span of the character there, so that the diagnostic shows the line.
    fn place_in(&mut self, source: &str) {
        let Some(position) = self.position.as_mut() else {
            return;
        };
        if position.span.is_some() || position.line == 0 {
            return;
        }
        let Some(line_start) = line_start(source, position.line) else {
            return;
        };
        let line = &source[line_around(source.as_bytes(), line_start)];
        let skip = usize::try_from(position.column.saturating_sub(1)).unwrap_or(usize::MAX);
        let (offset, length) = match line.char_indices().nth(skip) {
            Some((index, character)) => (line_start + index, character.len_utf8()),
            None => (line_start + line.len(), 0),
        };
        position.span = Some((offset, length));
        self.label = Some(SourceSpan::from((offset, length.max(1))));
    }

    /// A line this long is not shown: the excerpt would flood the terminal (a minified or
    /// hostile file); the message still names the line and column.
    const LONGEST_EXCERPT_LINE: usize = 1_000;

    fn drop_long_excerpt(&mut self, source: &str) {
        let Some((offset, _)) = self.position.and_then(|position| position.span) else {
            return;
        };
        let line = line_around(source.as_bytes(), offset);
        if line.len() > Self::LONGEST_EXCERPT_LINE
            && let Some(position) = self.position
        {
            self.label = None;
            self.message = format!(
                "{} (line {}, column {}; the line is too long to show)",
                self.message, position.line, position.column
            );
        }
    }

    /// This problem with `help`: what to write instead.
    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Problem {
        self.help = Some(help.into());
        self
    }
}

/// The bytes of the line that holds byte `offset` (past the end: the last line), without its
/// line break.
pub(super) fn line_around(bytes: &[u8], offset: usize) -> std::ops::Range<usize> {
    let offset = offset.min(bytes.len());
    let start = bytes[..offset]
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |index| index + 1);
    let end = bytes[offset..]
        .iter()
        .position(|byte| *byte == b'\n')
        .map_or(bytes.len(), |index| offset + index);
    start..end
}

/// The byte offset where line `line` (from 1) of `source` starts.
fn line_start(source: &str, line: u64) -> Option<usize> {
    if line == 1 {
        return Some(0);
    }
    let before = usize::try_from(line - 2).ok()?;
    source
        .match_indices('\n')
        .nth(before)
        .map(|(index, _)| index + 1)
}

/// A task file that cannot be run: it could not be read, is not YAML of the right shape, or
/// failed validation. Carries every problem found, not just the first.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{} is not a valid task: {}", path.display(), summary(problems))]
pub struct InvalidTask {
    /// The task file, as discovered (relative to the suite root when the run loaded it as
    /// part of a suite).
    pub path: PathBuf,
    /// Shared, so that the error stays small (it travels in `Result`s).
    #[source_code]
    source_code: Arc<NamedSource<String>>,
    /// Every error found, in the order found (never empty).
    #[related]
    pub problems: Vec<Problem>,
    /// What validation found questionable besides the errors (never fatal on its own).
    pub warnings: Vec<Problem>,
}

fn summary(problems: &[Problem]) -> String {
    match problems {
        [only] => only.to_string(),
        _ => format!("{} problems", problems.len()),
    }
}

impl InvalidTask {
    /// The problems of the file at `path` whose text is `source` (empty when it could not be
    /// read), each given a span in it for the excerpt.
    pub(crate) fn new(path: &Path, source: String, mut problems: Vec<Problem>) -> InvalidTask {
        for problem in &mut problems {
            problem.place_in(&source);
            problem.drop_long_excerpt(&source);
        }
        InvalidTask {
            path: path.to_path_buf(),
            source_code: Arc::new(NamedSource::new(path.display().to_string(), source)),
            problems,
            warnings: Vec::new(),
        }
    }

    /// Shows the file as `path` (e.g. relative to the suite root), in messages and excerpts.
    pub(crate) fn set_path(&mut self, path: PathBuf) {
        let text = self.source_code.inner().clone();
        self.source_code = Arc::new(NamedSource::new(path.display().to_string(), text));
        self.path = path;
    }

    /// This error with the warnings validation also found, shown beside the errors.
    pub(crate) fn with_warnings(mut self, warnings: Vec<Problem>) -> InvalidTask {
        self.warnings = warnings;
        self
    }

    /// The file's text, for rendering other diagnostics (warnings) against it.
    pub(crate) fn source(&self) -> &NamedSource<String> {
        &self.source_code
    }

    /// The first located line, for annotations that point at the file.
    pub(crate) fn first_line(&self) -> Option<u64> {
        self.problems
            .iter()
            .find_map(|problem| problem.position.map(|position| position.line))
    }

    /// One line per problem, `file:line:column: field: message`, for logs and JUnit.
    pub fn plain(&self) -> String {
        self.problems
            .iter()
            .map(|problem| problem.plain(&self.path) + "\n")
            .collect()
    }
}

impl Problem {
    /// `file:line:column: field: message (help: …)`, one line.
    pub fn plain(&self, path: &Path) -> String {
        let place = match self.position {
            Some(position) => format!("{}:{}:{}", path.display(), position.line, position.column),
            None => path.display().to_string(),
        };
        let mut text = format!("{place}: {self}");
        if let Some((note, position)) = &self.secondary {
            let _ = write!(
                text,
                " ({note}: line {}, column {})",
                position.line, position.column
            );
        }
        if let Some(help) = &self.help {
            let _ = write!(text, " (help: {help})");
        }
        text
    }
}

impl fmt::Display for Position {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}", self.line, self.column)
    }
}
