//! What a generation run reports: each stage's outcome as it happens ([`Progress`]), and what
//! the run did ([`Summary`]). Leaf data: the stages fill it, the binary prints it.

use std::path::PathBuf;

use super::parse::Intent;

/// What happened, as it happens: for progress lines.
#[derive(Debug)]
pub enum Progress<'a> {
    /// The parser answered (after `attempts` answers).
    Parsed {
        /// What it said.
        intent: &'a Intent,
        /// How many answers it took.
        attempts: u32,
    },
    /// A missing service was described, smoke-called and registered for this run.
    ServiceAdded {
        /// Its name.
        name: &'a str,
        /// How many answers it took.
        attempts: u32,
    },
    /// A missing service could not be described: the tasks go without it.
    ServiceDropped {
        /// Its name.
        name: &'a str,
        /// The last answer's problems.
        problems: &'a [String],
    },
    /// An answer was rejected; another attempt follows unless this was the last.
    Rejected {
        /// Whose answer it was.
        stage: Stage<'a>,
        /// The answer's number (from 1).
        attempt: u32,
        /// Why, one line each (`file:line:column: field: message`).
        problems: &'a [String],
    },
    /// A task was written.
    Written(&'a Written),
    /// A task was dropped after [`ATTEMPTS`](super::ATTEMPTS) answers.
    Dropped(&'a Dropped),
}

/// Who gave an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage<'a> {
    /// The parser.
    Parser,
    /// The description of this missing service.
    Service(&'a str),
    /// The task with this number (from 1).
    Task(u32),
}

impl std::fmt::Display for Stage<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Parser => formatter.write_str("parser"),
            Stage::Service(name) => write!(formatter, "service `{name}`"),
            Stage::Task(number) => write!(formatter, "task {number}"),
        }
    }
}

/// A task written.
#[derive(Debug, Clone)]
pub struct Written {
    /// Its number (from 1).
    pub number: u32,
    /// Its `task_id`.
    pub id: String,
    /// Its file.
    pub path: PathBuf,
    /// How many answers it took.
    pub attempts: u32,
    /// The action it was built around.
    pub focus: String,
}

/// A task dropped.
#[derive(Debug, Clone)]
pub struct Dropped {
    /// Its number (from 1).
    pub number: u32,
    /// The last answer's problems, one line each.
    pub problems: Vec<String>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The parser's intent (with the request's overrides).
    pub intent: Intent,
    /// The services generated for this run.
    pub services_added: Vec<String>,
    /// The services that could not be generated.
    pub services_dropped: Vec<String>,
    /// The tasks written, in order.
    pub written: Vec<Written>,
    /// The tasks dropped, in order.
    pub dropped: Vec<Dropped>,
    /// Answers rejected and asked again (over every stage).
    pub retries: u32,
    /// Model calls made.
    pub calls: usize,
    /// Tokens in and out, over every call.
    pub tokens: (u64, u64),
    /// What the calls cost (US dollars), when every model has a price.
    pub cost_usd: Option<f64>,
    /// The cassette written (record mode).
    pub recorded: Option<PathBuf>,
}
