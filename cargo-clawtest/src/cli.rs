//! The command line: `cargo clawtest [run] [FILTER…]`, `cargo clawtest list` and
//! `cargo clawtest validate [PATH…]`, `merge`, `grade`, `report`, `init`, `clean`,
//! `serve TASK.yaml`, `model --script PATH`, `services [NAME]`, `cassettes [status|prune|upgrade]`, `generate` and `vary`; and the one deprecated spelling kept working,
//! `generate --variants N --from …` for `vary` ([`deprecated_alias`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cargo-clawtest",
    bin_name = "cargo clawtest",
    version,
    about = "Run task.yaml agent evaluations as a CI regression suite",
    args_conflicts_with_subcommands = true,
    after_help = "Exit codes: 0 passed · 100 a task or gate failed · 101 invalid task or config · 102 infrastructure error or cost limit reached · 4 no task matched · 130 interrupted"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `cargo clawtest FILTER…` is `cargo clawtest run FILTER…`.
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The configuration file (default: the nearest clawtest.toml, else
    /// [workspace.metadata.clawtest] of the Cargo workspace).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per process, parsed once: a box would only add a pointer to follow"
)]
pub enum Command {
    /// Run the suite's tasks (the default).
    Run(RunArgs),
    /// List the suite's tasks without running them.
    List(ListArgs),
    /// Combine the JSON results of shards (`--partition`) into one run: one JUnit, one
    /// summary, one exit code.
    Merge(MergeArgs),
    /// Re-grade saved trajectories (`run --trajectories DIR`) against the suite's tasks,
    /// without running the agent.
    Grade(GradeArgs),
    /// Write the HTML report of a finished (or merged) run from its JSON results and saved
    /// trajectories, or the results in ClawEnvKit's layout of grading files.
    Report(ReportArgs),
    /// Write a starter suite into a repository: clawtest.toml, two example tasks with their
    /// cassettes, a harness Dockerfile and a GitHub Actions workflow.
    Init(InitArgs),
    /// The example agent that `init` configures as the harness (an OpenAI-compatible
    /// tool-calling loop that reads the sandbox contract); replace it with yours.
    ExampleAgent,
    /// The oracle as a harness process, started by `run --oracle` (not for direct use).
    #[command(hide = true)]
    OracleAgent,
    /// Check task files without running them: every error and warning of every file.
    Validate(ValidateArgs),
    /// Print the JSON Schema of task.yaml, for editors (the repository commits it as
    /// schema/task.schema.json).
    Schema,
    /// Remove the temporary folders and docker-sandbox containers that earlier (crashed) runs left behind.
    Clean,
    /// Write tasks from a sentence (`--request "…"`: Parser → Generator → Validator, the model
    /// through the gateway); every task validated and proven feasible before it is written.
    Generate(GenerateArgs),
    /// Write variants of tasks without a model: the same checks on another surface (names,
    /// ids, dates, amounts, order, distractors, wording), each proven feasible before it is
    /// written.
    Vary(VaryArgs),
    /// Serve one task's services alone, for debugging an agent by hand; prints the URL,
    /// the tools and each call as it happens, until Ctrl-C.
    Serve(ServeArgs),
    /// Serve a scripted model on loopback until Ctrl-C: answers from scripts instead of a
    /// provider (OpenAI chat completions and responses, Anthropic messages; whole or streamed),
    /// to record cassettes without an API key and to test an agent deterministically.
    Model(ModelArgs),
    /// List the built-in mock services: each one's routes, actions, parameters and fixture
    /// keys (what `tools`, `fixtures` and the checks of a task may name).
    Services(ServicesArgs),
    /// The suite's cassettes: which are current, diverged (at which call, with the diff),
    /// missing or unused, found by replaying the suite (no model is called); `prune` removes
    /// the unused ones, `upgrade` rewrites recorded ones in the current format.
    Cassettes(CassettesArgs),
}

#[derive(Debug, Args)]
pub struct CassettesArgs {
    #[command(subcommand)]
    pub action: Option<CassettesAction>,
    /// The cassette folder (default: llm.cassettes under the suite root, else cassettes/).
    #[arg(long, global = true, value_name = "DIR")]
    pub cassettes: Option<PathBuf>,
    /// Where the status's replay runs the harnesses: auto, process or docker (default:
    /// run.backend, else auto).
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<clawtest::config::BackendChoice>,
    /// Trials the status's replay runs at once (default: twice the number of CPUs).
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// In a harness × model matrix, only the cells this glob matches, as `HARNESS/MODEL`
    /// (`retrying/*`); repeatable. Each cell's cassettes are in `<harness>/<model>/`.
    #[arg(long = "cell", global = true, value_name = "GLOB")]
    pub cells: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum CassettesAction {
    /// Each task's cassette: current, diverged (the trial and call, why, and the recorded
    /// request against the one sent, as a diff), missing, not needed, unused (the default).
    Status,
    /// Remove the cassettes no task of the suite names.
    Prune,
    /// Rewrite the cassettes clawtest recorded in the current format: compact (each request
    /// as what it adds to the previous one, repeated trials once), every request
    /// `whole: true`, as a fresh recording writes them. Hand-written ones (with comments)
    /// are left as they are.
    Upgrade,
}

#[derive(Debug, Args)]
pub struct ModelArgs {
    /// A script (`turns:` of `tool_calls:` or `text:`; `retry_on:` texts of a failed tool
    /// result, to call it again as a model would), or a folder of them, one per task, each with
    /// `prompt_contains:` (a phrase of its task's prompt).
    #[arg(long, value_name = "FILE_OR_FOLDER")]
    pub script: PathBuf,
    /// The port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = clawtest::llm::gateway::scripted::DEFAULT_PORT)]
    pub port: u16,
}

#[derive(Debug, Args)]
pub struct ServicesArgs {
    /// One service to show (default: every service, one line each).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// `human` or `json` (every detail of the services shown).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run's JSON results (`run --json`, or `merge --json` of shards).
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,
    /// Write DIR/index.html (self-contained: open it in a browser).
    #[arg(long, value_name = "DIR", required_unless_present = "clawenvkit")]
    pub html: Option<PathBuf>,
    /// Write the results in ClawEnvKit's layout: DIR/<harness>/<model>/<task_id>/grading.json
    /// and reward.txt, and DIR/<harness>/<model>/summary.json (docs/matrix.md).
    #[arg(long, value_name = "DIR")]
    pub clawenvkit: Option<PathBuf>,
    /// The run's saved trajectories (`run --trajectories DIR`); once per shard of a merged run.
    #[arg(long, value_name = "DIR")]
    pub trajectories: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GradeArgs {
    /// Saved trajectories (`run --trajectories DIR`), or folders of them, re-graded against the
    /// suite's tasks; with --audit, the one task file to grade against
    /// (`grade TASK.yaml --audit FILE`).
    #[arg(value_name = "TRAJECTORY|TASK.yaml", required_unless_present = "task")]
    pub paths: Vec<PathBuf>,
    /// Grade one result against this task file instead (with --audit).
    #[arg(
        long,
        value_name = "TASK.yaml",
        requires = "audit",
        conflicts_with = "paths"
    )]
    pub task: Option<PathBuf>,
    /// The audit: ClawEnvKit's `{service: [{action, params, status}]}` (plus
    /// `_injected_errors`), or a clawtest trajectory file.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// The agent's final output (a text file).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The workspace folder the file checks read.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// How to print grades.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The repository to write into (default: the current directory).
    #[arg(value_name = "DIR", default_value = ".")]
    pub folder: PathBuf,
    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Task files or folders to check (default: the configured task globs).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// `human` (diagnostics with source excerpts) or `json` (a stable schema, see docs/task-format.md#validation).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Also check each task covers its intent atoms (`<task>.atoms.yaml` beside it).
    #[arg(long)]
    pub coverage: bool,
    /// Also prove each task feasible: play its oracle (`oracle:`, or derived from the checks)
    /// against fresh services and grade it; an infeasible task is an error (also
    /// `[validate] feasibility = true`).
    #[arg(long)]
    pub feasibility: bool,
    /// Where --feasibility runs the tasks' commands (`exit_code`, `pytest_pass`): auto,
    /// process (on this host) or docker (in a container of the harness image, never on the
    /// host) (default: run.backend, else auto).
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<clawtest::config::BackendChoice>,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Tasks from a sentence: the model (through the gateway: `[llm]` modes, cassettes, cost
    /// limit) parses it, writes each task, and every task is validated and proven feasible
    /// before it is written (default: `[generate] request`).
    #[arg(long, value_name = "TEXT")]
    pub request: Option<String>,
    /// How many tasks to write from the request (default: `[generate] count`, else 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=200))]
    pub count: Option<u32>,
    /// The services to use instead of the parser's choice; a name the catalogue lacks is
    /// generated as a task-local service.
    #[arg(long, value_name = "SERVICE,…", value_delimiter = ',')]
    pub services: Vec<String>,
    /// easy, medium or hard, instead of the parser's choice.
    #[arg(long, value_name = "LEVEL", value_parser = ["easy", "medium", "hard"])]
    pub difficulty: Option<String>,
    /// The prefix of the task ids, and the cassette's name (`cassettes/generate-NAME.yaml`)
    /// (default: `[generate] name`, else the request's first words).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where the model's answers come from: replay, record or live (default: llm.mode).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<clawtest::config::Mode>,
    /// The cassette folder (default: llm.cassettes under the suite root).
    #[arg(long, value_name = "DIR")]
    pub cassettes: Option<PathBuf>,
    /// Make no further model call once calls cost USD dollars (overrides llm.max_cost_usd).
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// The seed of the prompts' shuffles: the same seed writes the same bytes (default:
    /// `[generate] seed`, else 1).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// The folder the tasks are written to (default: `[generate] out`, else tasks/generated).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where the feasibility proof runs the commands the model wrote (`exit_code`,
    /// `pytest_pass`): docker runs them in a container of the harness image; on the process
    /// backend they never run, and a task that needs them is not accepted (default:
    /// run.backend, else auto).
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<clawtest::config::BackendChoice>,
}

#[derive(Debug, Args)]
pub struct VaryArgs {
    /// The task files, or folders searched for them, to make variants of.
    #[arg(value_name = "TASK_OR_FOLDER")]
    pub paths: Vec<PathBuf>,
    /// The same as the paths (the spelling of `generate --variants N --from …`).
    #[arg(long, value_name = "TASK_OR_FOLDER", hide = true)]
    pub from: Vec<PathBuf>,
    /// Variants to write per task (1 to 1000).
    #[arg(long, alias = "variants", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(clawtest::variants::MAX_VARIANTS)))]
    pub count: u32,
    /// The seed of every draw and shuffle: the same seed writes the same bytes (default 1).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// The folder the variants are written to.
    #[arg(long, value_name = "DIR", default_value = "variants")]
    pub out: PathBuf,
    /// Only these kinds of perturbation: names, ids, dates, amounts, shuffle, distractors,
    /// wording (default: all).
    #[arg(long, value_name = "KIND,…", value_delimiter = ',', value_parser = parse_kind)]
    pub only: Vec<clawtest::variants::Kind>,
    /// Leave people, companies and e-mail addresses as they are.
    #[arg(long)]
    pub no_names: bool,
    /// Leave ids as they are.
    #[arg(long)]
    pub no_ids: bool,
    /// Leave dates as they are.
    #[arg(long)]
    pub no_dates: bool,
    /// Leave amounts as they are.
    #[arg(long)]
    pub no_amounts: bool,
    /// Keep the fixtures' order.
    #[arg(long)]
    pub no_shuffle: bool,
    /// Add no distractor records.
    #[arg(long)]
    pub no_distractors: bool,
    /// Add no opening line to the prompt.
    #[arg(long)]
    pub no_wording: bool,
    /// Where the feasibility proof runs the variants' commands (`exit_code`, `pytest_pass`):
    /// auto, process or docker (in a container of the harness image) (default: run.backend,
    /// else auto).
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<clawtest::config::BackendChoice>,
    /// On the process backend, run the variants' commands on this host; without it they are
    /// not run, and a variant that has any is not written.
    #[arg(long)]
    pub allow_host_commands: bool,
}

/// The line printed on standard error when `generate --variants …` is rewritten to `vary`.
pub const VARY_NOTICE: &str = "warning: `generate --variants N --from PATH` is deprecated: use `cargo clawtest vary PATH --count N` (the other flags are the same)";

/// `arguments` (without the program name's repeated `clawtest`) with the deprecated spelling
/// `generate --variants N --from …` rewritten as `vary --variants N --from …` (which `vary`
/// reads as `--count N` and the paths), and whether it was: `generate`'s own flags and
/// `vary`'s are disjoint but for `--seed` and `--out`, so either of `--variants` and `--from`
/// means the variants command.
pub fn deprecated_alias(arguments: &mut [OsString]) -> bool {
    // The command is the first word that is neither an option nor `--config`'s value.
    let mut index = 1;
    while let Some(argument) = arguments.get(index) {
        if argument == "--config" {
            index += 2;
        } else if argument.to_string_lossy().starts_with('-') {
            index += 1;
        } else {
            break;
        }
    }
    if arguments
        .get(index)
        .is_none_or(|command| command != "generate")
    {
        return false;
    }
    let variants = arguments[index + 1..].iter().any(|argument| {
        let argument = argument.to_string_lossy();
        ["--variants", "--from"]
            .iter()
            .any(|flag| argument == *flag || argument.starts_with(&format!("{flag}=")))
    });
    if variants {
        arguments[index] = OsString::from("vary");
    }
    variants
}

impl VaryArgs {
    /// The kinds switched on: `--only`'s (else all), less each `--no-KIND`.
    pub fn kinds(&self) -> clawtest::variants::Kinds {
        use clawtest::variants::{Kind, Kinds};
        let mut kinds = if self.only.is_empty() {
            Kinds::all()
        } else {
            Kinds::only(&self.only)
        };
        for (off, kind) in [
            (self.no_names, Kind::Names),
            (self.no_ids, Kind::Ids),
            (self.no_dates, Kind::Dates),
            (self.no_amounts, Kind::Amounts),
            (self.no_shuffle, Kind::Shuffle),
            (self.no_distractors, Kind::Distractors),
            (self.no_wording, Kind::Wording),
        ] {
            if off {
                kinds = kinds.without(kind);
            }
        }
        kinds
    }
}

fn parse_kind(text: &str) -> Result<clawtest::variants::Kind, String> {
    clawtest::variants::Kind::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = clawtest::variants::Kind::ALL
            .iter()
            .map(|kind| kind.name())
            .collect();
        format!(
            "`{text}` is not a kind of perturbation; the kinds are {}",
            names.join(", ")
        )
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The task file.
    #[arg(value_name = "TASK.yaml")]
    pub task: PathBuf,
    /// The port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = clawtest::serve::standalone::DEFAULT_PORT)]
    pub port: u16,
    /// Inject faults into this fraction of POST calls (default 0: none, unlike a run's 0.25:
    /// by hand a random failure is noise; --error-rate 0.25 serves what a run injects).
    #[arg(long, value_name = "X", default_value_t = 0.0, value_parser = parse_fraction)]
    pub error_rate: f64,
    /// The fault seed (mixed with the task id).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Faults come in bursts rather than uniformly.
    #[arg(long)]
    pub burst: bool,
}

#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Run only tasks whose id or path contains one of these.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Task files or folders to run instead of the configured globs.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Trials per task, 1 to 1000; a task passes only if all of them pass (default 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(clawtest::config::MAX_TRIALS)))]
    pub trials: Option<u32>,
    /// Trials run at once (default: twice the number of CPUs).
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Run only shard M of N: `hash:M/N` (stable as tasks are added) or `count:M/N`.
    /// Gates are left to `cargo clawtest merge`.
    #[arg(long, value_name = "KIND:M/N")]
    pub partition: Option<clawtest::run::partition::Partition>,
    /// Run only the cells of the matrix this glob matches, as `HARNESS/MODEL`
    /// (`reference/*`, `*/gpt-4o`); repeatable (default: every cell).
    #[arg(long = "cell", value_name = "HARNESS/MODEL")]
    pub cells: Vec<String>,
    #[command(flatten)]
    pub outputs: OutputArgs,
    #[command(flatten)]
    pub gates: GateArgs,
    /// Where harnesses run: auto (docker when an image is configured and the engine
    /// answers, else process), process, or docker (default: run.backend, else auto).
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<clawtest::config::BackendChoice>,
    /// Where model answers come from: replay (from cassettes), record (call the provider and
    /// write cassettes), record-missing (replay each task its cassette still answers, record
    /// the others: missing or diverged) or live (call the provider) (default: llm.mode, else
    /// replay).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<clawtest::config::Mode>,
    /// The cassette folder (default: llm.cassettes under the suite root, else cassettes/).
    #[arg(long, value_name = "DIR")]
    pub cassettes: Option<PathBuf>,
    /// In record mode, replace a cassette even when it records more trials than this run.
    #[arg(long)]
    pub force: bool,
    /// Inject faults (429, 500, slow) into this fraction of service calls, instead of
    /// [faults] rate (default 0.25); a task's own error_injection.rate still wins. Cassettes
    /// recorded under another rate may no longer replay.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub error_rate: Option<f64>,
    /// Make no further model call once calls cost USD dollars (overrides llm.max_cost_usd);
    /// the trials cut short and the tasks left are reported as not run.
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// Save every trial's trajectory as DIR/<task_id>/trial-<n>.json (re-grade them with
    /// `cargo clawtest grade DIR`).
    #[arg(long, value_name = "DIR")]
    pub trajectories: Option<PathBuf>,
    /// Compare each task's grade breakdown with its snapshot in snapshots/ (insta's format);
    /// a change fails the run and is left as .snap.new for `cargo insta review`.
    #[arg(long)]
    pub snapshots: bool,
    /// Do not run `harness.build` first.
    #[arg(long)]
    pub no_build: bool,
    /// Run every task with its oracle as the harness (`oracle:`, or derived from the checks):
    /// no model, no cassettes, no build; a free smoke test that the suite can be passed.
    #[arg(long)]
    pub oracle: bool,
    /// Run N variants of each selected task instead of the task, drawn as the run goes and
    /// proven feasible (nothing is written; see `cargo clawtest vary`); N is 1 to 1000.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(clawtest::variants::MAX_VARIANTS)))]
    pub variants: Option<u32>,
    /// The seed of --variants (default 1).
    #[arg(long, value_name = "S", requires = "variants")]
    pub variant_seed: Option<u64>,
    /// On the process backend, run the commands (`exit_code`, `pytest_pass`) of --variants
    /// on this host; without it they are not run, and a variant that has any is not run
    /// (docker runs them in a container of the harness image).
    #[arg(long, requires = "variants")]
    pub allow_host_commands: bool,
    /// Show every trial's breakdown, not only failing tasks'.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

/// Where a run's (or a merge's) results go.
#[derive(Debug, Args, Default)]
pub struct OutputArgs {
    /// Write JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write JSON results here.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the Markdown summary here (it is also appended to $GITHUB_STEP_SUMMARY when set).
    #[arg(long, value_name = "PATH")]
    pub summary: Option<PathBuf>,
    /// Compare with this results JSON (e.g. from the main branch): a task that passed and now
    /// fails, or a drop beyond the tolerance, fails the run.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Also write the results JSON here, to serve as a later run's baseline.
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,
    /// Print GitHub annotations for failing tasks (default: when GITHUB_ACTIONS=true).
    #[arg(long)]
    pub annotations: bool,
    /// Write the HTML report as DIR/index.html (default: [report] html); a run shows each
    /// trial's trajectory, saved in --trajectories, else in DIR/trajectories.
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
}

/// Suite-level thresholds from the command line (over `[gates]` in the configuration).
#[derive(Debug, Args, Default)]
pub struct GateArgs {
    /// Fail the run when the mean final score is below X.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub min_score: Option<f64>,
    /// Fail the run when the mean robustness is below X.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub min_robustness: Option<f64>,
    /// Fail the run when the fraction of tasks passing pass^k is below X.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub min_pass_hat_k: Option<f64>,
    /// Fail the run when the agent recovered from less than RATE of the injected faults of
    /// KIND (rate_limited or server_error), over [gates.min_recovery]; may be repeated.
    #[arg(long, value_name = "KIND=RATE", value_parser = parse_min_recovery)]
    pub min_recovery: Vec<(clawtest::fault::FaultKind, f64)>,
    /// How far scores may drop against --baseline before the run fails (default 0.05).
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub baseline_tolerance: Option<f64>,
}

impl OutputArgs {
    /// The files to write, as the library's publisher takes them.
    pub fn outputs(&self) -> clawtest::report::publish::Outputs {
        clawtest::report::publish::Outputs {
            junit: self.junit.clone(),
            json: self.json.clone(),
            summary: self.summary.clone(),
            save_baseline: self.save_baseline.clone(),
            annotations: self.annotations,
            html: self.html.clone(),
            trajectories: Vec::new(),
        }
    }
}

impl GateArgs {
    pub fn gates(&self) -> clawtest::config::Gates {
        clawtest::config::Gates {
            min_score: self.min_score,
            min_robustness: self.min_robustness,
            min_pass_hat_k: self.min_pass_hat_k,
            min_recovery: self.min_recovery.iter().copied().collect(),
            baseline_tolerance: self.baseline_tolerance,
            ..clawtest::config::Gates::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results JSON files of the shards.
    #[arg(value_name = "RESULTS", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub outputs: OutputArgs,
    #[command(flatten)]
    pub gates: GateArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List only tasks whose id or path contains one of these.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Task files or folders to list instead of the configured globs.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

fn parse_fraction(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{value} is not between 0 and 1"))
    }
}

/// `KIND=RATE` of `--min-recovery`: a fault kind an agent can recover from, and a fraction.
fn parse_min_recovery(text: &str) -> Result<(clawtest::fault::FaultKind, f64), String> {
    use clawtest::fault::FaultKind;
    let Some((name, rate)) = text.split_once('=') else {
        return Err(format!("`{text}` is not KIND=RATE (e.g. rate_limited=0.9)"));
    };
    let kinds = || {
        FaultKind::ALL
            .into_iter()
            .filter(|kind| kind.is_error())
            .map(FaultKind::name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = FaultKind::from_name(name.trim())
        .ok_or_else(|| format!("`{name}` is not a fault kind; the kinds are {}", kinds()))?;
    if !kind.is_error() {
        return Err(format!(
            "a slow answer is answered, late: there is nothing to recover from; gate {}",
            kinds()
        ));
    }
    Ok((kind, parse_fraction(rate.trim())?))
}

fn parse_cost(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err(format!("`{text}` is not a positive amount of US dollars")),
    }
}

fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) | Err(_) => Err(format!("`{text}` is not a positive number of jobs")),
        Ok(jobs) => Ok(jobs),
    }
}
