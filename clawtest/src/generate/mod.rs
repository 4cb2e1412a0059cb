//! `cargo clawtest generate --request "…"`: tasks from a sentence, ClawEnvKit's Parser →
//! Generator → Validator with typed values between the stages, every model call through the
//! gateway (`model.rs`: recorded, replayed, priced, under the cost limit).
//!
//! - **Parser** (`parse.rs`): the request → an [`Intent`] (services, missing services,
//!   difficulty, 3–8 atoms).
//! - **Missing services** (`services.rs`): each service the catalogue (the built-in services
//!   and the suite's library, `services/`) lacks is described by the model as data, checked
//!   against the description schema and smoke-called before any task uses it, then written to
//!   the library once (`task::library`), where tasks name it and later runs find it.
//! - **Generator** (`prompt.rs`): one prompt per task, with the focus action rotated, the
//!   services' order shuffled by the seed, and the names already written to avoid.
//! - **Validator** (`ingest.rs`, `validate.rs`): the answer loaded as a task file (the 12
//!   structural checks, located), the atoms covered, the oracle proven (feasible, and told
//!   from doing nothing), no duplicate of the suite or of the run.
//!
//! A rejected answer's problems are fed back, up to [`ATTEMPTS`] answers a task; then the
//! task is dropped and reported. Each written file opens with its provenance (`write.rs`) and
//! is grouped (`grouping.rs`: its category and capability when the answer named none). The
//! same cassette and seed write the same bytes.

mod files;
mod grouping;
mod ingest;
pub mod model;
pub mod parse;
mod progress;
pub mod prompt;
mod services;
pub mod validate;
mod write;

use std::path::{Path, PathBuf};

use crate::config::{Config, Mode};
use crate::llm::ModelAccess;
use crate::llm::access::AccessError;
use crate::llm::gateway::CassetteError;
use crate::services::{Catalogue, ServiceDescription};

use crate::accept::Fingerprint;
use crate::task::Task;
pub use ingest::{ingest, strip_fences};
pub use model::{Message, Model, ModelError};
pub use parse::{Difficulty, Intent};
pub use progress::{Dropped, Progress, Stage, Summary, Written};

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
    /// Where the chosen backend runs a task's commands (`--backend`): the feasibility proof
    /// runs a model's commands there if it is a container, and nowhere on the host
    /// (`sandbox::commands`).
    pub commands: crate::sandbox::commands::CommandPlace,
}

/// Why generation stopped.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The gateway cannot be set up (`[llm]`).
    #[error(transparent)]
    Access(#[from] AccessError),
    /// A model call could not be answered (a replay miss, the provider, the cost limit).
    #[error("{0}")]
    Model(#[from] ModelError),
    /// The parser gave no usable answer in [`ATTEMPTS`].
    #[error("the parser's answers could not be used after {ATTEMPTS} attempts:\n{}", .0.join("\n"))]
    Parse(Vec<String>),
    /// No service is left to write tasks with.
    #[error("the request needs no service clawtest has or could generate")]
    NoServices,
    /// A file of the suite's service library cannot be used.
    #[error("the suite's service library cannot be used: {}", .0.plain())]
    Library(Box<crate::task::InvalidTask>),
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
    // The built-in services and the suite's library: a service an earlier run generated is
    // in the catalogue, so the parser finds it and nobody describes it again.
    let library = crate::task::library::load(&config.root, &Catalogue::builtin());
    if let Some(invalid) = library.invalid.into_iter().next() {
        return Err(GenerateError::Library(Box::new(invalid)));
    }
    let mut run = Run {
        config,
        request,
        model: model_for(config, request)?,
        catalogue: library.catalogue,
        retries: 0,
        progress,
    };
    let intent = run.parse().await?;
    let services = run.describe_missing(&intent).await?;
    let (written, dropped) = run.write_tasks(&intent, &services).await?;
    let recorded = run.model.finish()?;
    let calls = run.model.calls();
    let cost_usd = calls.iter().map(|call| call.cost_usd).sum::<Option<f64>>();
    Ok(Summary {
        intent,
        services_added: services
            .local
            .iter()
            .map(|service| service.name.clone())
            .collect(),
        services_dropped: services.dropped,
        written,
        dropped,
        retries: run.retries,
        tokens: (
            calls.iter().map(|call| call.input_tokens).sum(),
            calls.iter().map(|call| call.output_tokens).sum(),
        ),
        calls: calls.len(),
        cost_usd,
        recorded,
    })
}

/// The model of a run: the gateway `[llm]` (with the request's mode, limit and cassettes)
/// describes, recording to or replaying `generate-<name>`.
fn model_for(config: &Config, request: &Request) -> Result<Model, GenerateError> {
    let max_cost_usd = request.max_cost_usd.or(config.llm.max_cost_usd);
    let models = ModelAccess::from_config(
        config,
        request.mode.unwrap_or(config.llm.mode),
        max_cost_usd,
    )?;
    let cassettes = request
        .cassettes
        .clone()
        .unwrap_or_else(|| config.cassettes());
    let settings = &config.generate;
    Ok(Model::new(
        models,
        &cassettes,
        &format!("generate-{}", request.name),
        &settings.model,
        settings.provider,
    ))
}

/// One run of the pipeline: what every stage shares.
struct Run<'a> {
    config: &'a Config,
    request: &'a Request,
    model: Model,
    /// The built-in services and the suite's library (`services/`).
    catalogue: Catalogue,
    /// Answers rejected and asked again, over every stage.
    retries: u32,
    progress: &'a mut dyn FnMut(Progress<'_>),
}

/// The services the tasks may use.
struct Services {
    /// The generated services (task-local descriptions).
    local: Vec<ServiceDescription>,
    /// The services that could not be generated.
    dropped: Vec<String>,
    /// The catalogue with the generated services.
    catalogue: Catalogue,
    /// Every service a task may use: the intent's and the generated ones, in order.
    allowed: Vec<String>,
}

impl Run<'_> {
    /// The Parser: the request → an [`Intent`], with the request's overrides.
    async fn parse(&mut self) -> Result<Intent, GenerateError> {
        let builtin = &self.catalogue;
        let progress = &mut *self.progress;
        let (parsed, attempts) = ask_until(
            &mut self.model,
            0,
            parse::prompt(&self.request.request, builtin),
            &mut |attempt, problems| {
                progress(Progress::Rejected {
                    stage: Stage::Parser,
                    attempt,
                    problems,
                });
            },
            |answer| {
                parse::read(answer, builtin).map_err(|problems| plain_all(&problems, "(answer)"))
            },
        )
        .await?;
        let mut intent = parsed.map_err(GenerateError::Parse)?;
        self.retries += attempts - 1;
        if !self.request.services.is_empty() {
            (intent.services, intent.missing_services) = self
                .request
                .services
                .iter()
                .cloned()
                .partition(|name| builtin.get(name).is_some());
        }
        if let Some(difficulty) = self.request.difficulty {
            intent.difficulty = difficulty;
        }
        progress(Progress::Parsed {
            intent: &intent,
            attempts,
        });
        Ok(intent)
    }

    /// Each missing service described by the model, or dropped; the services left.
    async fn describe_missing(&mut self, intent: &Intent) -> Result<Services, GenerateError> {
        let mut local: Vec<ServiceDescription> = Vec::new();
        let mut dropped = Vec::new();
        for name in &intent.missing_services {
            let progress = &mut *self.progress;
            let mut rejected = |attempt: u32, problems: &[String]| {
                progress(Progress::Rejected {
                    stage: Stage::Service(name),
                    attempt,
                    problems,
                });
            };
            let described = services::describe(
                &mut self.model,
                name,
                &self.request.request,
                &self.catalogue,
                &mut rejected,
            )
            .await?;
            match described {
                (Ok(description), attempts) => {
                    self.retries += attempts - 1;
                    let cassette = shown(&self.model.cassette_path(), &self.config.root);
                    add_to_library(self.config, self.request, &cassette, &description)?;
                    progress(Progress::ServiceAdded { name, attempts });
                    local.push(description);
                }
                (Err(problems), _) => {
                    self.retries += ATTEMPTS - 1;
                    progress(Progress::ServiceDropped {
                        name,
                        problems: &problems,
                    });
                    dropped.push(name.clone());
                }
            }
        }
        let catalogue = self
            .catalogue
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
        Ok(Services {
            local,
            dropped,
            catalogue,
            allowed,
        })
    }

    /// The Generator and the Validator, task by task: the tasks written and those dropped.
    async fn write_tasks(
        &mut self,
        intent: &Intent,
        services: &Services,
    ) -> Result<(Vec<Written>, Vec<Dropped>), GenerateError> {
        let mut known = known_tasks(self.config, &self.request.out, &self.catalogue);
        let mut written = Vec::new();
        let mut dropped = Vec::new();
        for number in 1..=self.request.count {
            match self.task(number, intent, services, &known).await? {
                Ok((entry, task)) => {
                    known.push(Fingerprint::of(&task));
                    (self.progress)(Progress::Written(&entry));
                    written.push(entry);
                }
                Err(entry) => {
                    (self.progress)(Progress::Dropped(&entry));
                    dropped.push(entry);
                }
            }
        }
        Ok((written, dropped))
    }

    /// Task `number`: asked, validated against `known` and written, or dropped after
    /// [`ATTEMPTS`] answers.
    async fn task(
        &mut self,
        number: u32,
        intent: &Intent,
        services: &Services,
        known: &[Fingerprint],
    ) -> Result<Result<(Written, Task), Dropped>, GenerateError> {
        let request = self.request;
        let id = format!("{}-{number:03}", request.name);
        let path = request.out.join(format!("{id}.yaml"));
        let avoid: Vec<String> = known.iter().map(|known| known.name.clone()).collect();
        let descriptions: Vec<&ServiceDescription> = services
            .allowed
            .iter()
            .filter_map(|name| services.catalogue.get(name))
            .collect();
        let task_prompt = prompt::TaskPrompt {
            request: &request.request,
            intent,
            services: &descriptions,
            number,
            count: request.count,
            task_id: &id,
            avoid: &avoid,
            seed: request.seed,
        };
        let focus = task_prompt.focus().to_owned();
        let context = validate::Context {
            intent,
            allowed: &services.allowed,
            catalogue: &services.catalogue,
            threshold: self.config.run.pass_threshold,
            known,
            commands: &crate::sandbox::commands::CommandRule::new(request.commands.clone(), false)
                .for_origin(crate::sandbox::commands::Origin::Model),
        };
        let outcome = self.ask_task(number, &task_prompt, &context, &path).await?;
        let ((task, staged), attempts) = match outcome {
            (Ok(accepted), attempts) => (accepted, attempts),
            (Err(problems), _) => {
                self.retries += ATTEMPTS - 1;
                return Ok(Err(Dropped { number, problems }));
            }
        };
        self.retries += attempts - 1;
        let cassette = shown(&self.model.cassette_path(), &self.config.root);
        let provenance = write::Provenance {
            request: &request.request,
            model: &self.config.generate.model,
            seed: request.seed,
            number,
            count: request.count,
            attempts,
            focus: &focus,
            cassette: &cassette,
        };
        let written = write::Written {
            id: &id,
            catalogue: &services.catalogue,
            intent,
            faults: &self.config.faults,
        };
        // The files first: the task is loaded again from where it is written, with them.
        if let Some(staged) = &staged {
            staged.write(&path, &id)?;
        }
        let task = write::write(&task, &written, &provenance, &path)?;
        let entry = Written {
            number,
            id,
            path,
            attempts,
            focus,
        };
        Ok(Ok((entry, task)))
    }

    /// The model's answers to task `number`'s prompt, each loaded as the task file `path` (with
    /// the workspace files it describes, staged) and validated in `context`, until one passes:
    /// the task and its files, or the last problems; and how many answers were read.
    async fn ask_task(
        &mut self,
        number: u32,
        task_prompt: &prompt::TaskPrompt<'_>,
        context: &validate::Context<'_>,
        path: &Path,
    ) -> Result<(Result<(Task, Option<files::Staged>), Vec<String>>, u32), ModelError> {
        // Problems name the file by its name alone: they are fed back to the model, which must
        // be asked the same thing wherever `--out` puts the file, or a cassette recorded with
        // one `--out` would not replay with another.
        let path_shown = path.file_name().map_or_else(
            || shown(path, &self.config.root),
            |name| name.to_string_lossy().into_owned(),
        );
        let id = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let progress = &mut *self.progress;
        let mut rejected = |attempt: u32, problems: &[String]| {
            progress(Progress::Rejected {
                stage: Stage::Task(number),
                attempt,
                problems,
            });
        };
        ask_until(
            &mut self.model,
            number,
            task_prompt.text(),
            &mut rejected,
            |answer| {
                let (text, staged) = files::stage(strip_fences(answer), &id)
                    .map_err(|problems| plain_all(&problems, &path_shown))?;
                let load_path = staged
                    .as_ref()
                    .map_or_else(|| path.to_path_buf(), |staged| staged.task_path(path));
                let task = ingest(&text, &load_path, context.catalogue)
                    .map_err(|invalid| plain_all(&invalid.problems, &path_shown))?;
                let problems = validate::check(&task, strip_fences(&text), context);
                if problems.is_empty() {
                    Ok((task, staged))
                } else {
                    Err(plain_all(&problems, &path_shown))
                }
            },
        )
        .await
    }
}

/// Writes a described service to the suite's library (`services/<name>.yaml`) with its
/// provenance (the request, the model, the cassette: no date, so a replay writes the same
/// bytes), once: tasks name it, and later runs find it in the catalogue.
fn add_to_library(
    config: &Config,
    request: &Request,
    cassette: &str,
    description: &ServiceDescription,
) -> Result<(), GenerateError> {
    let words = request
        .request
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let header = crate::accept::Provenance {
        command: "generate",
        about: " for a service the request needed (clawtest provenance).".into(),
        lines: vec![
            format!("request: {words}"),
            format!("model: {}; cassette: {cassette}", config.generate.model),
        ],
    }
    .header();
    crate::task::library::write(&config.root, description, &header)
        .map(|_| ())
        .map_err(|error| GenerateError::Write {
            path: config
                .root
                .join(crate::task::library::FOLDER)
                .join(format!("{}.yaml", description.name)),
            error,
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
fn known_tasks(config: &Config, out: &Path, catalogue: &Catalogue) -> Vec<Fingerprint> {
    let out = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let files = crate::discover::task_files(&config.root, &config.tasks).unwrap_or_default();
    files
        .iter()
        .filter(|file| {
            let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
            !file.starts_with(&out)
        })
        .filter_map(|file| crate::task::load(file, catalogue).ok())
        .map(|task| Fingerprint::of(&task))
        .collect()
}

#[cfg(test)]
mod tests;
