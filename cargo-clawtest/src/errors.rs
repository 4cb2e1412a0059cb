//! What a command can end with other than success, how each is told to the user, and its exit
//! code: one exhaustive `match` in [`ExpectedError::exit_code`], so that a new way to fail
//! cannot reach the user without a code. The codes are documented in docs/guide.md#exit-codes:
//!
//! 0 every task and gate passed · 4 no task matched · 100 a task failed pass^k, a gate did not
//! hold, a task regressed or a grade snapshot changed · 101 an invalid task file, configuration
//! or command line · 102 an infrastructure error or the cost limit · 130 interrupted (Ctrl-C),
//! 143 stopped by SIGTERM, 129 by SIGHUP (partial results written in each case) · 2 a
//! command line clap could not parse.

use std::path::PathBuf;

use clawtest::config::ConfigError;
use clawtest::discover::DiscoverError;
use clawtest::generate::GenerateError;
use clawtest::init::InitError;
use clawtest::llm::gateway::scripted::{ModelServeError, ScriptError};
use clawtest::report::json::ResultsError;
use clawtest::report::publish::PublishError;
use clawtest::results::RunStatus;
use clawtest::results::merge::MergeError;
use clawtest::run::regrade::GradeOneError;
use clawtest::run::session::SessionError;
use clawtest::sandbox::docker::DockerError;
use clawtest::sandbox::select::BackendError;
use clawtest::serve::standalone::ServeError;
use clawtest::task::InvalidTask;

/// The exit codes, by name.
pub mod exit {
    pub const PASSED: u8 = 0;
    pub const NO_TASKS: u8 = 4;
    pub const FAILED: u8 = 100;
    pub const INVALID: u8 = 101;
    pub const INFRASTRUCTURE: u8 = 102;
    pub const INTERRUPTED: u8 = 130;

    /// The code of an interrupted run: 128 + the first stop signal (130 for Ctrl-C, 143 for
    /// SIGTERM, 129 for SIGHUP).
    pub fn interrupted() -> u8 {
        clawtest::interrupt::received().map_or(INTERRUPTED, |signal| signal.exit_code())
    }
}

/// Why a command did not succeed.
#[derive(Debug)]
pub enum ExpectedError {
    /// The configuration cannot be read or used.
    Config(ConfigError),
    /// The task file given cannot be used (`serve TASK.yaml`).
    Task(Box<InvalidTask>),
    /// The suite could not be loaded, or the run could not start.
    Session(SessionError),
    /// The sandbox asked for is not there (`--backend docker` without engine or image).
    Backend(BackendError),
    /// The async runtime could not start.
    Runtime(std::io::Error),
    /// `--baseline FILE` cannot be read.
    Baseline(ResultsError),
    /// A shard's results cannot be read (`merge`).
    Results(ResultsError),
    /// The shards do not make one run (`merge`).
    Merge(MergeError),
    /// An output file could not be written.
    Publish(PublishError),
    /// Arguments that do not go together, in a way the parser cannot say.
    Usage(&'static str),
    /// `grade PATH…` found no trajectory file in these paths.
    NoTrajectories(Vec<PathBuf>),
    /// One result could not be graded (`grade TASK.yaml --audit FILE`).
    GradeOne(GradeOneError),
    /// The starter suite could not be written (`init`).
    Init(InitError),
    /// The task files could not be looked for (`validate`, `vary`).
    Validate(DiscoverError),
    /// `validate` (or `vary`) found no task file.
    NoTaskFiles,
    /// A variant could not be written (`vary`).
    Variants(clawtest::variants::WriteError),
    /// Generation from a request stopped (`generate --request`).
    Generate(clawtest::generate::GenerateError),
    /// Generation ran, and every task was dropped (each reported as it was).
    NothingGenerated,
    /// The Docker engine could not be reached or cleaned (`clean`).
    Docker(DockerError),
    /// The task's services could not be served (`serve`).
    Serve(ServeError),
    /// The model's scripts cannot be read (`model`).
    Script(ScriptError),
    /// The scripted model could not be served (`model`).
    Model(ModelServeError),
    /// `services NAME` names no service.
    UnknownService(clawtest::services::listing::UnknownService),
    /// The run (or merge) ended other than passed; the terminal report has said how.
    Run(RunStatus),
    /// Invalid task files, or trajectories that could not be re-graded, already reported as
    /// they were found (`list`, `validate`, `grade PATH…`).
    Reported,
    /// A graded result did not pass; its grade was printed (`grade`).
    GradeFailed,
    /// A cassette needs recording (again) or could not be checked; the status said which
    /// (`cassettes`).
    StaleCassettes,
    /// The cassette folder could not be read or changed (`cassettes prune`, `upgrade`).
    CassetteFolder(PathBuf, std::io::Error),
}

impl ExpectedError {
    /// The process's exit code for this ending.
    pub fn exit_code(&self) -> u8 {
        use ExpectedError as E;
        match self {
            E::Session(SessionError::NoTasks { .. } | SessionError::NoVariants { .. })
            | E::NoTrajectories(_)
            | E::NoTaskFiles => exit::NO_TASKS,
            E::Run(RunStatus::Failed)
            | E::GradeFailed
            | E::NothingGenerated
            | E::StaleCassettes => exit::FAILED,
            E::Config(_)
            | E::Task(_)
            | E::Session(
                SessionError::Config(_)
                | SessionError::Discover(_)
                | SessionError::Access(_)
                | SessionError::WouldShrink { .. },
            )
            | E::Baseline(_)
            | E::Results(_)
            | E::Merge(_)
            | E::Usage(_)
            | E::GradeOne(
                GradeOneError::Task(_)
                | GradeOneError::Config(_)
                | GradeOneError::Unreadable { .. }
                | GradeOneError::NotJson { .. }
                | GradeOneError::Workspace { .. }
                | GradeOneError::Audit { .. },
            )
            | E::Init(InitError::Exists { .. })
            | E::Validate(_)
            | E::Serve(ServeError::World { .. })
            | E::Script(_)
            | E::UnknownService(_)
            | E::Run(RunStatus::Invalid)
            | E::Reported => exit::INVALID,
            E::Session(SessionError::Build(_))
            | E::Backend(_)
            | E::Runtime(_)
            | E::Publish(_)
            | E::GradeOne(GradeOneError::Judge(_))
            | E::Init(InitError::Write { .. })
            | E::Docker(_)
            | E::CassetteFolder(..)
            | E::Variants(_)
            | E::Serve(ServeError::Bind { .. } | ServeError::Server(_))
            | E::Model(_)
            | E::Run(RunStatus::InfrastructureError)
            // Tasks went unverified for a reason outside the agent: not a failure, not a pass.
            | E::Run(RunStatus::BudgetExhausted) => exit::INFRASTRUCTURE,
            E::Generate(error) => generate_exit_code(error),
            E::Run(RunStatus::Interrupted) => exit::interrupted(),
            // Not an error: a command ends with `Run` only for another status.
            E::Run(RunStatus::Passed) => exit::PASSED,
        }
    }

    /// Tells the user on standard error (nothing for what was already reported): located
    /// errors with their source excerpt and help, the others as one `error:` line.
    pub fn report(self) {
        match self {
            ExpectedError::Config(error) => report(error),
            ExpectedError::Task(error) => report(*error),
            ExpectedError::Session(error) => report(error),
            ExpectedError::Backend(error) => report(error),
            ExpectedError::GradeOne(GradeOneError::Task(error)) => report(*error),
            ExpectedError::GradeOne(GradeOneError::Config(error)) => report(error),
            ExpectedError::Validate(error) => report(miette::Report::msg(error.to_string())),
            ExpectedError::Runtime(error) => {
                errln!("error: could not start the async runtime: {error}")
            }
            ExpectedError::Baseline(error) => errln!("error: --baseline: {error}"),
            ExpectedError::Results(error) => errln!("error: {error}"),
            ExpectedError::Merge(error) => errln!("error: {error}"),
            ExpectedError::Publish(error) => errln!("error: {error}"),
            ExpectedError::Usage(message) => errln!("error: {message}"),
            ExpectedError::NoTrajectories(paths) => errln!(
                "error: no trajectory files in {}",
                paths
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ExpectedError::GradeOne(error) => errln!("error: {error}"),
            ExpectedError::Init(error @ InitError::Exists { .. }) => {
                errln!("error: {error}\nhelp: pass --force to overwrite them")
            }
            ExpectedError::Init(error) => errln!("error: {error}"),
            ExpectedError::NoTaskFiles => errln!("error: no task file found"),
            ExpectedError::Docker(error) => {
                errln!("error: {error}\nhelp: {}", error.advice())
            }
            ExpectedError::Serve(error) => errln!("error: {error}"),
            ExpectedError::Script(error) => {
                errln!("error: {error}\nhelp: {}", error.advice())
            }
            ExpectedError::Model(error @ ModelServeError::Bind { .. }) => errln!(
                "error: {error}\nhelp: choose another port: `cargo clawtest model --script … --port 0` takes any free one"
            ),
            ExpectedError::Model(error) => errln!("error: {error}"),
            ExpectedError::UnknownService(error) => errln!(
                "error: {error}\nhelp: {}; `cargo clawtest services` lists them",
                error.suggestion
            ),
            ExpectedError::Variants(error) => errln!("error: {error}"),
            ExpectedError::NothingGenerated => {
                errln!("error: every task was dropped: none was written")
            }
            ExpectedError::Generate(GenerateError::Access(error)) => report(error),
            ExpectedError::Generate(GenerateError::Library(invalid)) => report(*invalid),
            ExpectedError::Generate(error) => errln!("error: {error}"),
            ExpectedError::CassetteFolder(folder, error) => {
                errln!("error: cassette folder {}: {error}", folder.display())
            }
            ExpectedError::Run(_)
            | ExpectedError::Reported
            | ExpectedError::GradeFailed
            | ExpectedError::StaleCassettes => {}
        }
    }
}

/// What the user fixes (the configuration) is invalid; what the model or the machine did is
/// infrastructure; a model that gave nothing usable fails the command.
fn generate_exit_code(error: &GenerateError) -> u8 {
    match error {
        GenerateError::Access(_) | GenerateError::Library(_) => exit::INVALID,
        GenerateError::Parse(_) | GenerateError::NoServices => exit::FAILED,
        GenerateError::Model(_) | GenerateError::Write { .. } | GenerateError::Cassette(_) => {
            exit::INFRASTRUCTURE
        }
    }
}

/// A located error, rendered by miette (source excerpt, label, help).
pub fn report(error: impl Into<miette::Report>) {
    eprintln!("{:?}", error.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_ends_with_the_documented_code_of_its_status() {
        for (status, code) in [
            (RunStatus::Passed, exit::PASSED),
            (RunStatus::Failed, exit::FAILED),
            (RunStatus::Invalid, exit::INVALID),
            (RunStatus::InfrastructureError, exit::INFRASTRUCTURE),
            (RunStatus::BudgetExhausted, exit::INFRASTRUCTURE),
            (RunStatus::Interrupted, exit::INTERRUPTED),
        ] {
            assert_eq!(ExpectedError::Run(status).exit_code(), code, "{status:?}");
        }
    }

    #[test]
    fn what_the_user_must_fix_is_101_and_what_the_environment_must_fix_is_102() {
        let no_tasks = SessionError::NoTasks {
            root: PathBuf::from("/suite"),
            patterns: vec!["tasks/*.yaml".into()],
            filters: Vec::new(),
        };
        assert_eq!(ExpectedError::Session(no_tasks).exit_code(), exit::NO_TASKS);
        assert_eq!(ExpectedError::NoTaskFiles.exit_code(), exit::NO_TASKS);
        let key = SessionError::Access(clawtest::llm::access::AccessError::MissingKey {
            provider: "openai",
            variable: "OPENAI_API_KEY".into(),
        });
        assert_eq!(ExpectedError::Session(key).exit_code(), exit::INVALID);
        let build = SessionError::Build("the build failed".into());
        assert_eq!(
            ExpectedError::Session(build).exit_code(),
            exit::INFRASTRUCTURE
        );
        assert_eq!(ExpectedError::Usage("--audit").exit_code(), exit::INVALID);
        let judge = GradeOneError::Judge(clawtest::judge::JudgeError("no answer".into()));
        assert_eq!(
            ExpectedError::GradeOne(judge).exit_code(),
            exit::INFRASTRUCTURE
        );
        assert_eq!(ExpectedError::GradeFailed.exit_code(), exit::FAILED);
    }
}
