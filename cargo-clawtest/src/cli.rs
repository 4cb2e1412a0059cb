//! The command line: `cargo clawtest [run] [FILTER…]` and `cargo clawtest list`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cargo-clawtest",
    bin_name = "cargo clawtest",
    version,
    about = "Run task.yaml agent evaluations as a CI regression suite",
    args_conflicts_with_subcommands = true,
    after_help = "Exit codes: 0 passed · 100 a task or gate failed · 101 invalid task or config · 102 infrastructure error · 4 no task matched · 130 interrupted"
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
pub enum Command {
    /// Run the suite's tasks (the default).
    Run(RunArgs),
    /// List the suite's tasks without running them.
    List(ListArgs),
}

#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Run only tasks whose id or path contains one of these.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Task files or folders to run instead of the configured globs.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Trials per task; a task passes only if all of them pass (default 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: Option<u32>,
    /// Trials run at once (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Write JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write JSON results here.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Fail the run when the mean final score is below X.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub min_score: Option<f64>,
    /// Fail the run when the mean robustness is below X.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub min_robustness: Option<f64>,
    /// Fail the run when the fraction of tasks passing pass^k is below X.
    #[arg(long, value_name = "X", value_parser = parse_fraction)]
    pub min_pass_hat_k: Option<f64>,
    /// Stop starting trials once model calls cost USD dollars (overrides llm.max_cost_usd);
    /// the tasks left are reported as not run.
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// Do not run `harness.build` first.
    #[arg(long)]
    pub no_build: bool,
    /// Show every trial's breakdown, not only failing tasks'.
    #[arg(long, short = 'v')]
    pub verbose: bool,
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
