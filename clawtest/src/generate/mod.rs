//! `cargo clawtest generate --request "…"`: tasks from a sentence, ClawEnvKit's Parser →
//! Generator → Validator with typed values between the stages, every model call through the
//! gateway (`model.rs`: recorded, replayed, priced, under the cost limit).
//!
//! - **Parser** (`parse.rs`): the request → an [`Intent`] (services, missing services,
//!   difficulty, 3–8 atoms).
//! - **Missing services** (`services.rs`): each service the catalogue lacks is described by
//!   the model as data (a task-local `services:` entry), checked against the description
//!   schema and smoke-called before any task uses it.
//! - **Generator** (`prompt.rs`): one prompt per task, with the focus action rotated, the
//!   services' order shuffled by the seed, and the names already written to avoid.
//! - **Validator** (`ingest.rs`, `validate.rs`): the answer loaded as a task file (the 12
//!   structural checks, located), the atoms covered, the oracle proven (feasible, and told
//!   from doing nothing), no duplicate of the suite or of the run.
//!
//! A rejected answer's problems are fed back, up to [`ATTEMPTS`] answers a task; then the
//! task is dropped and reported. Each written file opens with its provenance (`write.rs`).
//! The same cassette and seed write the same bytes.

mod ingest;
pub mod model;
pub mod parse;
pub mod prompt;
mod services;
pub mod validate;
mod write;

use std::path::{Path, PathBuf};

use crate::config::{Config, Mode};
use crate::gateway::CassetteError;
use crate::run::session::SessionError;
use crate::services::{Catalogue, ServiceDescription};

pub use ingest::{ingest, strip_fences};
pub use model::{Message, Model, ModelError};
pub use parse::{Difficulty, Intent};
use validate::Known;

/// How many answers a stage may give before it is dropped (ClawEnvKit's 3).
pub const ATTEMPTS: u32 = 3;

/// What to generate.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request, one sentence.
    pub request: String,
    /// How many tasks to write.
    pub count: u32,
    /// The services to use instead of the parser's (unknown names are generated).
    pub services: Vec<String>,
    /// The difficulty instead of the parser's.
    pub difficulty: Option<Difficulty>,
    /// The seed of the shuffles.
    pub seed: u64,
    /// The prefix of the task ids and the cassette's name.
    pub name: String,
    /// The folder the tasks are written to.
    pub out: PathBuf,
    /// `--mode`, over `llm.mode`.
    pub mode: Option<Mode>,
    /// `--max-cost-usd`, over `llm.max_cost_usd`.
    pub max_cost_usd: Option<f64>,
    /// `--cassettes`, over `llm.cassettes`.
    pub cassettes: Option<PathBuf>,
}

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
    /// A task was dropped after [`ATTEMPTS`] answers.
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

/// Why generation stopped.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The gateway cannot be set up (`[llm]`).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A model call could not be answered (a replay miss, the provider, the cost limit).
    #[error("{0}")]
    Model(#[from] ModelError),
    /// The parser gave no usable answer in [`ATTEMPTS`].
    #[error("the parser's answers could not be used after {ATTEMPTS} attempts:\n{}", .0.join("\n"))]
    Parse(Vec<String>),
    /// No service is left to write tasks with.
    #[error("the request needs no service clawtest has or could generate")]
    NoServices,
    /// A file could not be written.
    #[error("cannot write `{}`: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The recorded cassette could not be saved.
    #[error(transparent)]
    Cassette(#[from] CassetteError),
}

/// The default name of a run: the request's first words, lower case, joined by `_`.
pub fn default_name(request: &str) -> String {
    let words: Vec<String> = request
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .take(4)
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() {
        "generated".into()
    } else {
        words.join("_")
    }
}

/// Runs the pipeline for `request` in the suite `config` describes, reporting to `progress`.
pub async fn generate(
    config: &Config,
    request: &Request,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Summary, GenerateError> {
    let session = crate::run::session::Request {
        mode: request.mode,
        max_cost_usd: request.max_cost_usd,
        cassettes: request.cassettes.clone(),
        ..Default::default()
    };
    let models = crate::run::settings::models(config, &session)?;
    let cassettes = request
        .cassettes
        .clone()
        .unwrap_or_else(|| config.cassettes());
    let settings = &config.generate;
    let mut model = Model::new(
        models,
        &cassettes,
        &format!("generate-{}", request.name),
        &settings.model,
        settings.provider,
    );
    let builtin = Catalogue::builtin();
    let mut retries = 0;

    // Parser.
    let (parsed, attempts) = ask_until(
        &mut model,
        0,
        parse::prompt(&request.request, &builtin),
        &mut |attempt, problems| {
            progress(Progress::Rejected {
                stage: Stage::Parser,
                attempt,
                problems,
            });
        },
        |answer| parse::read(answer, &builtin).map_err(|problems| plain_all(&problems, "(answer)")),
    )
    .await?;
    let mut intent = parsed.map_err(GenerateError::Parse)?;
    retries += attempts - 1;
    if !request.services.is_empty() {
        (intent.services, intent.missing_services) = request
            .services
            .iter()
            .cloned()
            .partition(|name| builtin.get(name).is_some());
    }
    if let Some(difficulty) = request.difficulty {
        intent.difficulty = difficulty;
    }
    progress(Progress::Parsed {
        intent: &intent,
        attempts,
    });

    // Missing services.
    let mut local: Vec<ServiceDescription> = Vec::new();
    let mut services_dropped = Vec::new();
    for name in intent.missing_services.clone() {
        let mut rejected = |attempt: u32, problems: &[String]| {
            progress(Progress::Rejected {
                stage: Stage::Service(&name),
                attempt,
                problems,
            });
        };
        let described =
            services::describe(&mut model, &name, &request.request, &builtin, &mut rejected)
                .await?;
        match described {
            (Ok(description), attempts) => {
                retries += attempts - 1;
                progress(Progress::ServiceAdded {
                    name: &name,
                    attempts,
                });
                local.push(description);
            }
            (Err(problems), _) => {
                retries += ATTEMPTS - 1;
                progress(Progress::ServiceDropped {
                    name: &name,
                    problems: &problems,
                });
                services_dropped.push(name);
            }
        }
    }
    let catalogue = builtin
        .with(local.clone())
        .map_err(|error| GenerateError::Model(ModelError(error.to_string())))?;
    let allowed: Vec<String> = intent
        .services
        .iter()
        .cloned()
        .chain(local.iter().map(|service| service.name.clone()))
        .collect();
    if allowed.is_empty() {
        return Err(GenerateError::NoServices);
    }
    let descriptions: Vec<&ServiceDescription> = allowed
        .iter()
        .filter_map(|name| catalogue.get(name))
        .collect();

    // Generator and Validator, task by task.
    let mut known = known_tasks(config, &request.out, &builtin);
    let mut written = Vec::new();
    let mut dropped = Vec::new();
    let cassette_shown = shown(&model.cassette_path(), &config.root);
    for number in 1..=request.count {
        let id = format!("{}-{number:03}", request.name);
        let path = request.out.join(format!("{id}.yaml"));
        // Problems name the file as the user sees it in the suite, the same on every machine.
        let path_shown = shown(&path, &config.root);
        let avoid: Vec<String> = known.iter().map(|known| known.name.clone()).collect();
        let task_prompt = prompt::TaskPrompt {
            request: &request.request,
            intent: &intent,
            services: &descriptions,
            number,
            count: request.count,
            task_id: &id,
            avoid: &avoid,
            seed: request.seed,
        };
        let focus = task_prompt.focus().to_owned();
        let context = validate::Context {
            intent: &intent,
            allowed: &allowed,
            catalogue: &catalogue,
            threshold: config.run.pass_threshold,
            known: &known,
        };
        let mut rejected = |attempt: u32, problems: &[String]| {
            progress(Progress::Rejected {
                stage: Stage::Task(number),
                attempt,
                problems,
            });
        };
        let outcome = ask_until(
            &mut model,
            number,
            task_prompt.text(),
            &mut rejected,
            |answer| {
                let task = ingest(answer, &path, &catalogue)
                    .map_err(|invalid| plain_all(&invalid.problems, &path_shown))?;
                let problems = validate::check(&task, strip_fences(answer), &context);
                if problems.is_empty() {
                    Ok(task)
                } else {
                    Err(plain_all(&problems, &path_shown))
                }
            },
        )
        .await?;
        match outcome {
            (Ok(task), attempts) => {
                retries += attempts - 1;
                let provenance = write::Provenance {
                    request: &request.request,
                    model: &settings.model,
                    seed: request.seed,
                    number,
                    count: request.count,
                    attempts,
                    focus: &focus,
                    cassette: &cassette_shown,
                };
                let task = write::write(&task, &id, &local, &intent, &provenance, &path)?;
                known.push(Known::of(&task));
                let entry = Written {
                    number,
                    id,
                    path: path.clone(),
                    attempts,
                    focus,
                };
                progress(Progress::Written(&entry));
                written.push(entry);
            }
            (Err(problems), _) => {
                retries += ATTEMPTS - 1;
                let entry = Dropped { number, problems };
                progress(Progress::Dropped(&entry));
                dropped.push(entry);
            }
        }
    }
    let recorded = model.finish()?;
    let calls = model.calls();
    let cost_usd = calls.iter().map(|call| call.cost_usd).sum::<Option<f64>>();
    Ok(Summary {
        intent,
        services_added: local.iter().map(|service| service.name.clone()).collect(),
        services_dropped,
        written,
        dropped,
        retries,
        tokens: (
            calls.iter().map(|call| call.input_tokens).sum(),
            calls.iter().map(|call| call.output_tokens).sum(),
        ),
        calls: calls.len(),
        cost_usd,
        recorded,
    })
}

/// What `read` makes of the model's answers to `prompt`, asked in `stage`, each rejected
/// answer's problems told to `rejected` and fed back, up to [`ATTEMPTS`] answers: the value
/// or the last problems, and how many answers were read.
async fn ask_until<T>(
    model: &mut Model,
    stage: u32,
    prompt: String,
    rejected: &mut dyn FnMut(u32, &[String]),
    mut read: impl FnMut(&str) -> Result<T, Vec<String>>,
) -> Result<(Result<T, Vec<String>>, u32), ModelError> {
    let mut conversation = vec![Message::user(prompt)];
    let mut last = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let answer = model.ask(stage, &conversation).await?;
        match read(&answer) {
            Ok(value) => return Ok((Ok(value), attempt)),
            Err(problems) => {
                rejected(attempt, &problems);
                conversation.push(Message::assistant(answer));
                conversation.push(Message::user(prompt::retry(&problems)));
                last = problems;
            }
        }
    }
    Ok((Err(last), ATTEMPTS))
}

/// Each problem as one line, `place: field: message (help: …)`.
fn plain_all(problems: &[crate::task::Problem], place: &str) -> Vec<String> {
    problems
        .iter()
        .map(|problem| problem.plain(Path::new(place)))
        .collect()
}

/// `path` relative to `root` when inside it, for provenance that is the same in every
/// checkout.
fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The suite's tasks that dedup compares with: every valid task the configuration's globs
/// find, but those in `out` (which this run rewrites).
fn known_tasks(config: &Config, out: &Path, catalogue: &Catalogue) -> Vec<Known> {
    let out = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let files = crate::discover::task_files(&config.root, &config.tasks).unwrap_or_default();
    files
        .iter()
        .filter(|file| {
            let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
            !file.starts_with(&out)
        })
        .filter_map(|file| crate::task::load(file, catalogue).ok())
        .map(|task| Known::of(&task))
        .collect()
}

#[cfg(test)]
mod tests;
