//! `cargo clawtest`: the thin binary. It parses argv, calls the clawtest library, prints
//! errors, and maps outcomes to exit codes. Nothing else lives here.
//!
//! Exit codes: 0 all tasks and gates passed; 100 a task failed pass^k or a gate failed;
//! 101 an invalid task file or configuration; 102 an infrastructure error (harness that
//! cannot start or build, cassette miss, Docker engine or image missing, …); 4 no task
//! matched; 130 interrupted. `clean` removes docker-sandbox containers of earlier runs.

mod cli;

/// Prints to standard output. A reader that went away (`cargo clawtest validate | head`) is not
/// an error: the rest of the output is dropped and the command still ends with its exit code.
/// Any other failure to write is reported once on standard error.
macro_rules! out {
    ($($argument:tt)*) => {
        write_out(format_args!($($argument)*))
    };
}

/// [`out!`] with a newline.
macro_rules! outln {
    ($($argument:tt)*) => {
        write_out(format_args!("{}\n", format_args!($($argument)*)))
    };
}

fn write_out(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};

    static FAILED: AtomicBool = AtomicBool::new(false);
    if FAILED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(error) = std::io::stdout().lock().write_fmt(text) {
        FAILED.store(true, Ordering::Relaxed);
        if error.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to standard output: {error}");
        }
    }
}

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use clawtest::config::Config;
use clawtest::report::{
    annotations, json, junit, markdown, terminal::TerminalReporter, trajectories::TrajectoryWriter,
};
use clawtest::run::session::{self, Request, SessionError};
use clawtest::run::{Event, Fanout, Reporter, RunStatus, RunSummary, baseline, merge};
use clawtest::sandbox::select;
use clawtest::services::Catalogue;

use cli::{
    Cli, Command, Format, GradeArgs, InitArgs, ListArgs, MergeArgs, OutputArgs, RunArgs, ServeArgs,
    ValidateArgs,
};

/// The exit codes, in one place (documented in README.md).
mod exit {
    pub const PASSED: u8 = 0;
    pub const NO_TASKS: u8 = 4;
    pub const FAILED: u8 = 100;
    pub const INVALID: u8 = 101;
    pub const INFRASTRUCTURE: u8 = 102;
    pub const INTERRUPTED: u8 = 130;
}

fn main() -> ExitCode {
    // `cargo clawtest …` runs `cargo-clawtest clawtest …`: drop the repeated subcommand name.
    let mut arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments
        .get(1)
        .is_some_and(|argument| argument == "clawtest")
    {
        arguments.remove(1);
    }
    let cli = Cli::parse_from(arguments);
    let code = match cli.command {
        Some(Command::List(list)) => list_tasks(&cli.global, &list),
        Some(Command::Merge(merge)) => merge_results(&cli.global, &merge),
        Some(Command::Init(init)) => initialise(&init),
        Some(Command::Grade(grade)) => regrade(&cli.global, &grade),
        Some(Command::ExampleAgent) => clawtest_reference_agent::run_from_env(),
        Some(Command::Run(run)) => run_tasks(&cli.global, &run),
        Some(Command::Validate(validate)) => validate_tasks(&cli.global, &validate),
        Some(Command::Schema) => {
            out!("{}", clawtest::spec::schema::task_schema_text());
            0
        }
        Some(Command::Clean) => clean(),
        Some(Command::Serve(serve)) => serve_task(&serve),
        None => run_tasks(&cli.global, &cli.run),
    };
    ExitCode::from(code)
}

fn report_error(error: impl Into<miette::Report>) {
    eprintln!("{:?}", error.into());
}

fn load_config(global: &cli::GlobalArgs) -> Result<Config, u8> {
    let loaded = match &global.config {
        Some(path) => Config::from_file(path),
        None => {
            let start = std::env::current_dir().unwrap_or_else(|_| Path::new(".").to_path_buf());
            Config::discover(&start)
        }
    };
    loaded.map_err(|error| {
        report_error(error);
        exit::INVALID
    })
}

fn session_error_code(error: SessionError) -> u8 {
    let code = match &error {
        SessionError::NoTasks { .. } => exit::NO_TASKS,
        other if other.is_user_input() => exit::INVALID,
        _ => exit::INFRASTRUCTURE,
    };
    report_error(error);
    code
}

fn run_tasks(global: &cli::GlobalArgs, arguments: &RunArgs) -> u8 {
    let config = match load_config(global) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let baseline = match read_baseline(&arguments.outputs) {
        Ok(baseline) => baseline,
        Err(code) => return code,
    };
    let request = Request {
        paths: arguments.paths.clone(),
        filters: arguments.filters.clone(),
        trials: arguments.trials,
        jobs: arguments.jobs,
        gates: arguments.gates.gates(),
        no_build: arguments.no_build,
        partition: arguments.partition,
        baseline,
        backend: arguments.backend,
        max_cost_usd: arguments.max_cost,
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let outcome = runtime.block_on(async {
        let chosen = match select::choose(&config, request.backend).await {
            Ok(chosen) => chosen,
            Err(error) => return Err(Err(error)),
        };
        eprintln!("{}", chosen.note);
        let sandbox = chosen.sandbox;
        let (interrupt, interrupted) = tokio::sync::watch::channel(false);
        // First Ctrl-C: stop starting trials, stop running harnesses, write partial results.
        // Second: remove whatever the sandbox still runs, and leave at once.
        let aborting = Arc::clone(&sandbox);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: stopping trials and writing partial results (Ctrl-C again to quit at once)");
                let _ = interrupt.send(true);
                if tokio::signal::ctrl_c().await.is_ok() {
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), aborting.abort()).await;
                    std::process::exit(i32::from(exit::INTERRUPTED));
                }
            }
        });
        let mut terminal = TerminalReporter::new(std::io::stdout(), std::io::stderr().is_terminal(), arguments.verbose);
        let mut saver = arguments.trajectories.clone().map(TrajectoryWriter::new);
        let mut reporters: Vec<&mut dyn Reporter> = vec![&mut terminal];
        if let Some(saver) = saver.as_mut() {
            reporters.push(saver);
        }
        let outcome = session::run(&config, &request, sandbox, &mut Fanout(reporters), interrupted).await.map_err(Ok);
        for failure in saver.map(|saver| saver.failures).unwrap_or_default() {
            eprintln!("warning: could not save a trajectory: {failure}");
        }
        outcome
    });
    let summary = match outcome {
        Ok(summary) => summary,
        Err(Ok(error)) => return session_error_code(error),
        Err(Err(error)) => {
            report_error(error);
            return exit::INFRASTRUCTURE;
        }
    };
    if let Err(code) = publish(&summary, &arguments.outputs, &config.root) {
        return code;
    }
    let code = status_code(summary.status);
    if arguments.snapshots && !summary.interrupted {
        let changed = compare_snapshots(&summary, &config.root.join(SNAPSHOTS));
        if changed && code == exit::PASSED {
            return exit::FAILED;
        }
    }
    code
}

/// Where `--snapshots` keeps each task's grade snapshot, relative to the suite root.
const SNAPSHOTS: &str = "snapshots";

/// Compares each task's grade breakdown with its snapshot, insta's way; true when any differs.
fn compare_snapshots(summary: &RunSummary, folder: &Path) -> bool {
    use clawtest::report::snapshots::{Comparison, UpdateMode, compare};
    let results = match compare(&summary.verdicts, folder, UpdateMode::from_environment()) {
        Ok(results) => results,
        Err(error) => {
            eprintln!(
                "error: could not write snapshots in {}: {error}",
                folder.display()
            );
            return true;
        }
    };
    let mut changed = false;
    for (task_id, comparison) in results {
        match comparison {
            Comparison::Matched => {}
            Comparison::Written => outln!("SNAPSHOT {task_id}: written"),
            Comparison::Changed {
                snapshot,
                pending,
                new,
            } => {
                changed = true;
                let what = if new { "new" } else { "changed" };
                match pending {
                    Some(pending) => outln!(
                        "SNAPSHOT {task_id}: {what}; review {} with `cargo insta review` (or INSTA_UPDATE=always)",
                        pending.display()
                    ),
                    None => outln!(
                        "SNAPSHOT {task_id}: {what} against {} (INSTA_UPDATE=no: nothing written)",
                        snapshot.display()
                    ),
                }
            }
        }
    }
    changed
}

fn read_baseline(outputs: &OutputArgs) -> Result<Option<RunSummary>, u8> {
    outputs
        .baseline
        .as_ref()
        .map(|path| {
            json::read(path).map_err(|error| {
                eprintln!("error: --baseline: {error}");
                exit::INVALID
            })
        })
        .transpose()
}

/// The async runtime every command runs on; failing to start one is an infrastructure error.
fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("error: could not start the async runtime: {error}");
            exit::INFRASTRUCTURE
        })
}

fn status_code(status: RunStatus) -> u8 {
    match status {
        RunStatus::Passed => exit::PASSED,
        RunStatus::Failed => exit::FAILED,
        RunStatus::Invalid => exit::INVALID,
        RunStatus::InfrastructureError => exit::INFRASTRUCTURE,
        RunStatus::Interrupted => exit::INTERRUPTED,
        // Tasks went unverified for a reason outside the agent: not a failure, not a pass.
        RunStatus::BudgetExhausted => exit::INFRASTRUCTURE,
    }
}

/// Writes every requested output: JUnit, JSON, the Markdown
/// summary (and $GITHUB_STEP_SUMMARY), the saved baseline, and GitHub annotations.
fn publish(summary: &RunSummary, outputs: &OutputArgs, suite_root: &Path) -> Result<(), u8> {
    let write = |path: &Path, text: &str| {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(path, text).map_err(|error| {
            eprintln!("error: could not write {}: {error}", path.display());
            exit::INFRASTRUCTURE
        })
    };
    if let Some(path) = &outputs.junit {
        match junit::render(summary) {
            Ok(xml) => write(path, &xml)?,
            Err(error) => {
                eprintln!("error: could not render JUnit XML: {error}");
                return Err(exit::INFRASTRUCTURE);
            }
        }
    }
    let results = json::render(summary);
    for path in [&outputs.json, &outputs.save_baseline]
        .into_iter()
        .flatten()
    {
        write(path, &results)?;
    }
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|path| !path.is_empty());
    if outputs.summary.is_some() || step_summary.is_some() {
        let text = markdown::render(summary, markdown::SIZE_LIMIT);
        if let Some(path) = &outputs.summary {
            write(path, &text)?;
        }
        if let Some(path) = step_summary {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
            if let Err(error) = appended {
                eprintln!(
                    "warning: could not append to $GITHUB_STEP_SUMMARY ({}): {error}",
                    Path::new(&path).display()
                );
            }
        }
    }
    if outputs.annotations || std::env::var("GITHUB_ACTIONS").is_ok_and(|value| value == "true") {
        for line in annotations::render(summary, &repository_prefix(suite_root)) {
            outln!("{line}");
        }
    }
    Ok(())
}

/// The suite root relative to the repository (GitHub resolves annotation paths against
/// $GITHUB_WORKSPACE), or relative to the current directory outside Actions.
fn repository_prefix(suite_root: &Path) -> PathBuf {
    let base = std::env::var_os("GITHUB_WORKSPACE")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let base = std::path::absolute(&base).unwrap_or(base);
    let root = std::path::absolute(suite_root).unwrap_or_else(|_| suite_root.to_path_buf());
    root.strip_prefix(&base)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn merge_results(global: &cli::GlobalArgs, arguments: &MergeArgs) -> u8 {
    let mut parts = Vec::new();
    for path in &arguments.files {
        match json::read(path) {
            Ok(summary) => parts.push((path.clone(), summary)),
            Err(error) => {
                eprintln!("error: {error}");
                return exit::INVALID;
            }
        }
    }
    // The configuration is optional here: merging needs only its gates, if there is one.
    let start = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = match &global.config {
        Some(path) => Config::from_file(path).map(Some),
        None => Config::discover(&start)
            .map(Some)
            .or_else(|error| match error {
                clawtest::config::ConfigError::NotFound { .. } => Ok(None),
                other => Err(other),
            }),
    };
    let config = match config {
        Ok(config) => config,
        Err(error) => {
            report_error(error);
            return exit::INVALID;
        }
    };
    let configured = config
        .as_ref()
        .map(|config| config.gates.clone())
        .unwrap_or_default();
    let gates = arguments.gates.gates().or(&configured);
    let mut summary = match merge::merge(parts, &gates) {
        Ok(summary) => summary,
        Err(error) => {
            eprintln!("error: {error}");
            return exit::INVALID;
        }
    };
    match read_baseline(&arguments.outputs) {
        Ok(Some(before)) => {
            let comparison = baseline::compare(&before, &summary, gates.tolerance());
            baseline::apply(&mut summary, comparison);
        }
        Ok(None) => {}
        Err(code) => return code,
    }
    let root = config.map(|config| config.root).unwrap_or(start);
    if let Err(code) = publish(&summary, &arguments.outputs, &root) {
        return code;
    }
    let mut reporter = TerminalReporter::new(std::io::stdout(), false, false);
    reporter.report(&Event::RunFinished {
        summary: summary.clone(),
    });
    status_code(summary.status)
}

fn regrade(global: &cli::GlobalArgs, arguments: &GradeArgs) -> u8 {
    if let Some(audit) = &arguments.audit {
        // `grade TASK.yaml --audit FILE` and `grade --task TASK.yaml --audit FILE` are one.
        let task = match (&arguments.task, arguments.paths.as_slice()) {
            (Some(task), _) => task.clone(),
            (None, [task]) => task.clone(),
            _ => {
                eprintln!(
                    "error: --audit grades one result: give one task file (`grade TASK.yaml --audit FILE`)"
                );
                return exit::INVALID;
            }
        };
        return grade_one(global, arguments, &task, audit);
    }
    if arguments.output.is_some() || arguments.workspace.is_some() {
        eprintln!(
            "error: --output and --workspace go with --audit (`grade TASK.yaml --audit FILE --output FILE`)"
        );
        return exit::INVALID;
    }
    let config = match load_config(global) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let suite = match session::load_suite(&config, &Request::default(), &Catalogue::builtin()) {
        Ok(suite) => suite,
        Err(error) => return session_error_code(error),
    };
    let files = clawtest::run::regrade::trajectory_files(&arguments.paths);
    if files.is_empty() {
        eprintln!(
            "error: no trajectory files in {}",
            arguments
                .paths
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return exit::NO_TASKS;
    }
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let judge = clawtest::judge::from_config(&config);
    let results = runtime.block_on(clawtest::run::regrade::regrade(
        &files,
        &suite.tasks,
        config.run.pass_threshold,
        judge.as_ref(),
    ));
    let mut code = exit::PASSED;
    let mut printed = Vec::new();
    for regraded in results {
        match regraded.outcome {
            Ok((trajectory, grade)) => {
                let label = format!(
                    "{} (task {}, trial {})",
                    regraded.path.display(),
                    trajectory.task_id,
                    trajectory.trial
                );
                printed.push(show_grade(
                    arguments.format,
                    &label,
                    &trajectory.task_id,
                    &grade,
                ));
                if !grade.passed {
                    code = code.max(exit::FAILED);
                }
            }
            Err(message) => {
                eprintln!("error: {message}");
                code = exit::INVALID;
            }
        }
    }
    if arguments.format == Format::Json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&printed).unwrap_or_default()
        );
    }
    code
}

/// Prints a grade for humans at once, or returns it for the JSON list printed at the end.
fn show_grade(
    format: Format,
    label: &str,
    task_id: &str,
    grade: &clawtest::grade::Grade,
) -> serde_json::Value {
    if format == Format::Human {
        outln!("{label}");
        out!("{}", clawtest::report::grade_breakdown(grade));
    }
    serde_json::json!({"source": label, "task_id": task_id, "grade": grade})
}

/// `grade --task TASK.yaml --audit FILE [--output FILE] [--workspace DIR]`: one result, in
/// ClawEnvKit's form or as a clawtest trajectory.
fn grade_one(
    global: &cli::GlobalArgs,
    arguments: &GradeArgs,
    task_path: &Path,
    audit_path: &Path,
) -> u8 {
    let task = match clawtest::spec::load(task_path, &Catalogue::builtin()) {
        Ok(task) => task,
        Err(error) => {
            report_error(error);
            return exit::INVALID;
        }
    };
    // A suite configuration is optional here: it only supplies the threshold and judge cache.
    let start = task_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let config = match &global.config {
        Some(path) => Config::from_file(path).ok(),
        None => Config::discover(&std::path::absolute(&start).unwrap_or(start)).ok(),
    };
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|error| {
            eprintln!("error: cannot read {}: {error}", path.display());
            exit::INVALID
        })
    };
    let audit_text = match read(audit_path) {
        Ok(text) => text,
        Err(code) => return code,
    };
    let audit: serde_json::Value = match serde_json::from_str(&audit_text) {
        Ok(audit) => audit,
        Err(error) => {
            eprintln!("error: {} is not JSON: {error}", audit_path.display());
            return exit::INVALID;
        }
    };
    let output = match &arguments.output {
        Some(path) => match read(path) {
            Ok(text) => text.trim().to_string(),
            Err(code) => return code,
        },
        None => String::new(),
    };
    let workspace = match &arguments.workspace {
        Some(folder) => match clawtest::sandbox::process::snapshot(folder) {
            Ok(files) => files,
            Err(error) => {
                eprintln!(
                    "error: cannot read the workspace {}: {error}",
                    folder.display()
                );
                return exit::INVALID;
            }
        },
        None => Default::default(),
    };
    let trajectory = if audit.get("schema").and_then(serde_json::Value::as_str)
        == Some(clawtest::trajectory::SCHEMA)
    {
        clawtest::trajectory::Trajectory::read(audit_path).map_err(|error| error.to_string())
    } else {
        clawtest::run::regrade::from_clawenvkit(&task, &audit, output, workspace)
    };
    let trajectory = match trajectory {
        Ok(trajectory) => trajectory,
        Err(message) => {
            eprintln!("error: {}: {message}", audit_path.display());
            return exit::INVALID;
        }
    };
    let judge = config
        .as_ref()
        .map(clawtest::judge::from_config)
        .unwrap_or_else(|| std::sync::Arc::new(clawtest::judge::NoJudge));
    let requests = clawtest::grade::judge::plan(&task, &trajectory);
    let answers = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(clawtest::judge::answer_all(judge.as_ref(), &requests)),
        Err(error) => Err(clawtest::judge::JudgeError(error.to_string())),
    };
    let answers = match answers {
        Ok(answers) => answers,
        Err(error) => {
            eprintln!("error: {error}");
            return exit::INFRASTRUCTURE;
        }
    };
    let threshold = task
        .pass_threshold
        .or(config.map(|config| config.run.pass_threshold))
        .unwrap_or(0.75);
    let grade = clawtest::grade::grade(&task, &trajectory, &answers, threshold);
    let shown = show_grade(
        arguments.format,
        &audit_path.display().to_string(),
        &task.id,
        &grade,
    );
    if arguments.format == Format::Json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
    }
    if grade.passed {
        exit::PASSED
    } else {
        exit::FAILED
    }
}

fn initialise(arguments: &InitArgs) -> u8 {
    match clawtest::init::init(&arguments.folder, arguments.force) {
        Ok(written) => {
            for path in written {
                outln!("wrote {}", arguments.folder.join(path).display());
            }
            outln!(
                "\nnext: run `cargo clawtest` here; then point [harness] command in clawtest.toml at your agent"
            );
            exit::PASSED
        }
        Err(error @ clawtest::init::InitError::Exists { .. }) => {
            eprintln!("error: {error}\nhelp: pass --force to overwrite them");
            exit::INVALID
        }
        Err(error) => {
            eprintln!("error: {error}");
            exit::INFRASTRUCTURE
        }
    }
}

fn list_tasks(global: &cli::GlobalArgs, arguments: &ListArgs) -> u8 {
    let config = match load_config(global) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let request = Request {
        paths: arguments.paths.clone(),
        filters: arguments.filters.clone(),
        ..Request::default()
    };
    let suite = match session::load_suite(&config, &request, &Catalogue::builtin()) {
        Ok(suite) => suite,
        Err(error) => return session_error_code(error),
    };
    let width = suite
        .tasks
        .iter()
        .map(|task| task.id.len())
        .max()
        .unwrap_or(0);
    for task in &suite.tasks {
        outln!(
            "{:<width$}  {}  [{}]  {}",
            task.id,
            task.path.display(),
            task.services.join(", "),
            task.name
        );
    }
    let code = if suite.invalid.is_empty() {
        exit::PASSED
    } else {
        exit::INVALID
    };
    for invalid in suite.invalid {
        report_error(invalid);
    }
    code
}

fn validate_tasks(global: &cli::GlobalArgs, arguments: &ValidateArgs) -> u8 {
    // Explicit paths need no configuration: without one, the defaults apply.
    let config = if global.config.is_none() && !arguments.paths.is_empty() {
        let start = std::env::current_dir().unwrap_or_else(|_| Path::new(".").to_path_buf());
        match Config::discover(&start) {
            Ok(config) => config,
            Err(clawtest::config::ConfigError::NotFound { .. }) => {
                match Config::from_text("", Path::new("(defaults)"), start) {
                    Ok(config) => config,
                    Err(error) => {
                        report_error(error);
                        return exit::INVALID;
                    }
                }
            }
            Err(error) => {
                report_error(error);
                return exit::INVALID;
            }
        }
    } else {
        match load_config(global) {
            Ok(config) => config,
            Err(code) => return code,
        }
    };
    let options = clawtest::validate::Options {
        coverage: arguments.coverage,
    };
    let report = match clawtest::validate::validate(
        &config,
        &arguments.paths,
        &Catalogue::builtin(),
        options,
    ) {
        Ok(report) => report,
        Err(error) => {
            report_error(miette::Report::msg(error.to_string()));
            return exit::INVALID;
        }
    };
    if report.files.is_empty() {
        eprintln!("error: no task file found");
        return exit::NO_TASKS;
    }
    match arguments.format {
        Format::Json => out!("{}", report.to_json()),
        Format::Human => out!("{}", report.render_human(std::io::stdout().is_terminal())),
    }
    if report.is_valid() {
        exit::PASSED
    } else {
        exit::INVALID
    }
}
fn clean() -> u8 {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let removed = runtime.block_on(async {
        let engine = clawtest::sandbox::docker::connect().await?;
        clawtest::sandbox::docker::clean(&engine).await
    });
    match removed {
        Ok(count) => {
            outln!("removed {count} clawtest container(s)");
            exit::PASSED
        }
        Err(error) => {
            eprintln!("error: {error}\nhelp: {}", error.advice());
            exit::INFRASTRUCTURE
        }
    }
}

/// `cargo clawtest serve`: stops on Ctrl-C with exit code 0 (stopping is its normal end).
fn serve_task(arguments: &ServeArgs) -> u8 {
    use clawtest::world::{FaultMode, FaultPlan, WorldOptions};
    let catalogue = Catalogue::builtin();
    let task = match clawtest::spec::load(&arguments.task, &catalogue) {
        Ok(task) => task,
        Err(error) => {
            report_error(error);
            return exit::INVALID;
        }
    };
    let mode = if arguments.burst {
        FaultMode::Burst
    } else {
        FaultMode::Uniform
    };
    let options = WorldOptions {
        faults: FaultPlan::for_trial(&task.id, 0, arguments.error_rate, arguments.seed, mode),
        ..WorldOptions::default()
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let served = runtime.block_on(clawtest::services::standalone::serve_task(
        &task,
        &catalogue,
        arguments.port,
        options,
        std::io::stdout(),
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    ));
    match served {
        Ok(()) => exit::PASSED,
        Err(error @ clawtest::services::standalone::ServeError::World { .. }) => {
            eprintln!("error: {error}");
            exit::INVALID
        }
        Err(error) => {
            eprintln!("error: {error}");
            exit::INFRASTRUCTURE
        }
    }
}
