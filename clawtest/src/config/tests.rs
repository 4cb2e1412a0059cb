//! The configuration's defaults, its located errors and its checks.

use std::path::{Path, PathBuf};

use super::*;
use crate::config::Mode;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_text(text, Path::new("clawtest.toml"), PathBuf::from("/suite"))
}

#[test]
fn defaults_follow_the_design() {
    let config = parse("[harness]\ncommand = \"./agent --fast\"\n").unwrap();
    assert_eq!(config.run.trials, 3);
    assert_eq!(config.run.pass_threshold, 0.75);
    assert_eq!(config.tasks, ["tasks/**/*.yaml", "tasks/**/*.yml"]);
    assert_eq!(
        config.harness_command().unwrap(),
        ["/suite/./agent", "--fast"]
    );
    assert_eq!(config.llm.mode, Mode::Replay);
}

#[test]
fn an_unknown_key_is_located() {
    let error = parse("tasks = [\"t/*.yaml\"]\n[run]\ntrails = 3\n").unwrap_err();
    match error {
        ConfigError::Invalid(invalid) => {
            assert!(invalid.message.contains("trails"), "{}", invalid.message);
            assert_eq!(invalid.line, Some(3));
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn docker_keys_parse_and_are_checked() {
    let config = parse(
        "[harness]\ncommand = \"/agent\"\nimage = \"agent:1\"\n[run]\nbackend = \"docker\"\n[docker]\npids = 64\n",
    )
    .unwrap();
    assert_eq!(config.run.backend, BackendChoice::Docker);
    assert_eq!(config.harness.image.as_deref(), Some("agent:1"));
    assert_eq!(config.docker.pids, 64);
    assert_eq!(config.docker.memory_mb, 2048);
    assert!(config.docker.reuse, "worker containers by default");
    assert_eq!(config.harness_command_in_image().unwrap(), ["/agent"]);
    let one_shot = parse("[docker]\nreuse = false\n").unwrap();
    assert!(!one_shot.docker.reuse);
    let error = parse("[run]\nbackend = \"vm\"\n").unwrap_err();
    assert!(error.to_string().contains("vm"), "{error}");
    let error = parse("[harness]\nimage = \"a\"\ndockerfile = \"Dockerfile\"\n").unwrap_err();
    assert!(error.to_string().contains("harness.dockerfile"), "{error}");
}

#[test]
fn the_workspace_disk_cap_defaults_to_a_gibibyte_and_is_at_least_a_mebibyte() {
    assert_eq!(parse("").unwrap().limits.workspace_disk_bytes, 1 << 30);
    let config = parse("[limits]\nworkspace_disk_bytes = 1048576\n").unwrap();
    assert_eq!(config.limits.workspace_disk_bytes, 1 << 20);
    let error = parse("[limits]\nworkspace_disk_bytes = 4096\n").unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("limits.workspace_disk_bytes") && message.contains("at least 1048576"),
        "{message}"
    );
}

#[test]
fn the_llm_table_reads_providers_prices_and_budget() {
    let config = parse(
        "[llm]\nmode = \"record\"\nmax_cost_usd = 2.5\n[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"OPENAI_API_KEY\"\n[llm.prices.\"gpt-4o-mini\"]\ninput_per_million = 0.15\noutput_per_million = 0.6\n",
    )
    .unwrap();
    assert_eq!(config.llm.mode, Mode::Record);
    assert_eq!(config.llm.max_cost_usd, Some(2.5));
    assert_eq!(
        config.llm.openai.unwrap().api_key_env.as_deref(),
        Some("OPENAI_API_KEY")
    );
    assert_eq!(config.llm.prices["gpt-4o-mini"].output_per_million, 0.6);
    let error = parse("[llm]\nmax_cost_usd = -1\n").unwrap_err();
    assert!(error.to_string().contains("llm.max_cost_usd"), "{error}");
}

#[test]
fn out_of_range_gates_are_rejected() {
    let error = parse("[gates]\nmin_score = 7\n").unwrap_err();
    assert!(error.to_string().contains("gates.min_score"), "{error}");
}

#[test]
fn the_defaults_are_those_of_an_empty_file() {
    let read = Config::from_text("", Path::new("(defaults)"), PathBuf::from("/suite")).unwrap();
    assert_eq!(
        format!("{:?}", Config::defaults(PathBuf::from("/suite"))),
        format!("{read:?}")
    );
    assert_eq!(read.run.pass_threshold, DEFAULT_PASS_THRESHOLD);
}

#[test]
fn an_optional_configuration_is_none_only_when_none_is_given_or_found() {
    let folder = tempfile::tempdir().unwrap();
    assert!(
        Config::optional(None, folder.path()).unwrap().is_none(),
        "nothing given, nothing found"
    );
    let missing = folder.path().join("missing.toml");
    assert!(matches!(
        Config::optional(Some(&missing), folder.path()),
        Err(ConfigError::Unreadable { .. })
    ));
    let broken = folder.path().join(FILE_NAME);
    std::fs::write(&broken, "[run]\ntrails = 3\n").unwrap();
    // Given or found, a file that does not parse is an error, never "no configuration".
    assert!(matches!(
        Config::optional(Some(&broken), folder.path()),
        Err(ConfigError::Invalid(_))
    ));
    assert!(matches!(
        Config::optional(None, folder.path()),
        Err(ConfigError::Invalid(_))
    ));
    std::fs::write(&broken, "[run]\ntrials = 5\n").unwrap();
    let found = Config::optional(None, folder.path()).unwrap().unwrap();
    assert_eq!(found.run.trials, 5);
}

#[test]
fn replay_matching_keys_parse_and_are_checked() {
    let config = parse(
        "[llm]\nmax_request_bytes = 4096\n[llm.replay]\ndefaults = false\nignore_fields = [\"metadata.session_id\"]\nredactions = [{ pattern = 'session-[0-9]+', replacement = \"session-<n>\" }]\n",
    )
    .unwrap();
    assert!(!config.llm.replay.defaults);
    assert_eq!(config.llm.replay.redactions[0].replacement, "session-<n>");
    assert_eq!(config.llm.max_request_bytes, 4096);
    assert_eq!(parse("").unwrap().llm.max_answer_bytes, 32 * 1024 * 1024);
    let error = parse("[llm.replay]\nredactions = [{ pattern = '(' }]\n").unwrap_err();
    assert!(
        error.to_string().starts_with(
            "llm.replay.redactions[0].pattern in clawtest.toml: `(` is not a regular expression"
        ),
        "{error}"
    );
    let error = parse("[llm.replay]\nignore_fields = [\"metadata..id\"]\n").unwrap_err();
    assert!(
        error.to_string().contains("not a dotted field path"),
        "{error}"
    );
    let error = parse("[llm]\nmax_request_bytes = 10\n").unwrap_err();
    assert!(error.to_string().contains("at least 1024 bytes"), "{error}");
}

#[test]
fn the_report_table_names_the_html_folder() {
    assert_eq!(parse("").unwrap().report.html, None);
    // Without the table, as with every other section.
    assert_eq!(parse("[run]\ntrials = 1\n").unwrap().report.html, None);
    let config = parse("[report]\nhtml = \"target/clawtest-report\"\n").unwrap();
    assert_eq!(
        config.report.html.as_deref(),
        Some(Path::new("target/clawtest-report"))
    );
    let error = parse("[report]\nhtlm = \"x\"\n").unwrap_err();
    assert!(error.to_string().contains("htlm"), "{error}");
}

#[test]
fn generate_settings_out_of_range_name_their_field() {
    for (text, field) in [
        ("[generate]\ncount = 0\n", "generate.count"),
        ("[generate]\nname = \"../up\"\n", "generate.name"),
    ] {
        match parse(text) {
            Err(ConfigError::Value { field: found, .. }) => assert_eq!(found, field),
            other => panic!("{text}: expected an error at {field}, got {other:?}"),
        }
    }
    // A difficulty is read as one, so a wrong one is located in the file.
    match parse("[generate]\ndifficulty = \"brutal\"\n") {
        Err(ConfigError::Invalid(file)) => {
            let text = file.to_string();
            assert!(
                text.contains("must be easy, medium or hard, found `brutal`"),
                "{text}"
            );
        }
        other => panic!("expected a located error at generate.difficulty, got {other:?}"),
    }
    let config = parse("[generate]\nrequest = \"r\"\ncount = 3\nname = \"weekly-1\"\n").unwrap();
    assert_eq!(config.generate.count, 3);
    assert_eq!(config.generate.out, PathBuf::from("tasks/generated"));
}

#[test]
fn an_unknown_backend_or_mode_is_named_with_the_choices() {
    let backend = "dockr".parse::<BackendChoice>().unwrap_err();
    assert_eq!(
        backend.to_string(),
        "`dockr` is not a backend: use auto, process or docker"
    );
    let mode = "replays".parse::<Mode>().unwrap_err();
    assert_eq!(
        mode.to_string(),
        "`replays` is not a mode: use live, record, record-missing or replay"
    );
}

#[test]
fn trials_past_the_cap_are_refused_before_anything_is_planned() {
    for trials in [0, 1001, 1_000_000_000] {
        match parse(&format!("[run]\ntrials = {trials}\n")) {
            Err(ConfigError::Value { field, message, .. }) => {
                assert_eq!(field, "run.trials");
                assert_eq!(message, format!("must be from 1 to 1000, found {trials}"));
            }
            other => panic!("trials = {trials}: expected an error, got {other:?}"),
        }
    }
    assert_eq!(parse("[run]\ntrials = 1000\n").unwrap().run.trials, 1000);
}

#[test]
fn a_harness_argument_that_names_a_suite_file_is_made_absolute_and_suite_dir_is_expanded() {
    let suite = tempfile::tempdir().unwrap();
    std::fs::write(suite.path().join("agent.py"), "print('hi')\n").unwrap();
    std::fs::create_dir(suite.path().join("prompts")).unwrap();
    let root = suite.path().to_path_buf();
    let config = Config::from_text(
        "[harness]\ncommand = [\".venv/bin/python\", \"agent.py\", \"--fast\", \"notes.txt\", \".\", \"../agent.py\", \"./prompts\", \"--config=${SUITE_DIR}/agent.toml\"]\n",
        Path::new("clawtest.toml"),
        root.clone(),
    )
    .unwrap();
    let suite_dir = root.display().to_string();
    assert_eq!(
        config.harness_command().unwrap(),
        [
            format!("{suite_dir}/.venv/bin/python"),
            format!("{suite_dir}/agent.py"),
            "--fast".into(),
            // Not in the suite folder: a path of the trial's workspace, as written.
            "notes.txt".into(),
            ".".into(),
            "../agent.py".into(),
            format!("{suite_dir}/./prompts"),
            format!("--config={suite_dir}/agent.toml"),
        ]
    );
}

#[test]
fn faults_are_on_by_default_at_clawenvkits_rate_and_mix() {
    let config = parse("").unwrap();
    assert_eq!(config.faults, crate::fault::FaultSettings::default());
    assert_eq!(config.faults.rate, 0.25);
    assert_eq!(
        (
            config.faults.mix.rate_limited,
            config.faults.mix.server_error,
            config.faults.mix.slow
        ),
        (0.35, 0.35, 0.30)
    );
    let quiet = parse("[faults]\nrate = 0\nmode = \"burst\"\nseed = 4\n").unwrap();
    assert_eq!(
        (quiet.faults.rate, quiet.faults.mode, quiet.faults.seed),
        (0.0, crate::fault::InjectionMode::Burst, Some(4))
    );
}

#[test]
fn fault_settings_and_recovery_gates_are_checked_by_name() {
    let error = |text: &str| match parse(text).unwrap_err() {
        ConfigError::Value { field, message, .. } => format!("{field}: {message}"),
        ConfigError::Invalid(invalid) => invalid.message,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        error("[faults]\nrate = 25\n"),
        "faults.rate: must be a probability between 0 and 1, found 25 (a percentage? write `rate = 0.25`)"
    );
    assert!(
        error("[faults]\nmix = { rate_limited = 0, server_error = 0, slow = 0 }\n")
            .starts_with("faults.mix: gives every kind weight 0")
    );
    assert!(error("[faults]\nslow_ms = [4000, 2000]\n").starts_with("faults.slow_ms: must be"));
    assert!(
        error("[gates.min_recovery]\nslow = 0.9\n")
            .starts_with("gates.min_recovery.slow: a slow answer is answered")
    );
    assert!(error("[gates.min_recovery]\ntimeout = 0.9\n").contains("unknown variant `timeout`"));
    assert_eq!(
        parse("[gates.min_recovery]\nrate_limited = 0.9\n")
            .unwrap()
            .gates
            .min_recovery[&crate::fault::FaultKind::RateLimited],
        0.9
    );
}
