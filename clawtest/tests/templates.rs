//! The files `cargo clawtest init` writes stay valid: the configuration parses, every task
//! validates, every cassette loads, and the workflow uses only pinned public actions.

use clawtest::config::Config;
use clawtest::init::TEMPLATES;
use clawtest::llm::gateway::Cassette;
use clawtest::services::Catalogue;

fn initialised() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    clawtest::init::init(folder.path(), false).expect("init writes into an empty folder");
    folder
}

#[test]
fn the_configuration_template_parses() {
    let folder = initialised();
    let config =
        Config::from_file(&folder.path().join("clawtest.toml")).expect("clawtest.toml is valid");
    assert_eq!(config.run.trials, 3);
    assert_eq!(
        config.harness_command().unwrap(),
        ["cargo-clawtest", "example-agent"]
    );
}

#[test]
fn every_task_template_validates_and_has_a_cassette() {
    let folder = initialised();
    let tasks: Vec<&str> = TEMPLATES
        .iter()
        .map(|template| template.path)
        .filter(|path| path.starts_with("tasks/") && path.ends_with(".yaml"))
        .collect();
    assert_eq!(tasks.len(), 2);
    for path in tasks {
        let task = clawtest::task::load(&folder.path().join(path), &Catalogue::builtin())
            .unwrap_or_else(|error| panic!("{}", error.plain()));
        let cassette = Cassette::load(&folder.path().join("cassettes"), &task.id)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(cassette.trials.len(), 3, "{}", task.id);
    }
}

#[test]
fn init_refuses_to_overwrite_unless_forced() {
    let folder = initialised();
    std::fs::write(folder.path().join("clawtest.toml"), "# mine\n").unwrap();
    let error = clawtest::init::init(folder.path(), false).unwrap_err();
    assert!(error.to_string().contains("clawtest.toml"), "{error}");
    assert_eq!(
        std::fs::read_to_string(folder.path().join("clawtest.toml")).unwrap(),
        "# mine\n"
    );
    clawtest::init::init(folder.path(), true).unwrap();
    assert_ne!(
        std::fs::read_to_string(folder.path().join("clawtest.toml")).unwrap(),
        "# mine\n"
    );
}

/// What zizmor (the GitHub Actions security linter, run by .ci/run) asks of a workflow, checked
/// without it: every action pinned to a commit (a tag can be moved to other code), every
/// checkout without persisted credentials (a job that uploads its workspace would upload the
/// token), and read-only permissions at the top.
fn assert_what_zizmor_checks(name: &str, text: &str) {
    let document: serde_json::Value =
        serde_saphyr::from_str(text).unwrap_or_else(|error| panic!("{name}: not YAML: {error}"));
    assert_eq!(
        document["permissions"],
        serde_json::json!({"contents": "read"}),
        "{name}: the workflow's permissions must be read-only"
    );
    let jobs = document["jobs"].as_object().expect("jobs");
    for (job, body) in jobs {
        let steps = body["steps"].as_array().expect("steps");
        for step in steps {
            let Some(action) = step["uses"].as_str() else {
                continue;
            };
            let (repository, version) = action
                .split_once('@')
                .unwrap_or_else(|| panic!("{name}: job {job}: {action} is not pinned"));
            assert_eq!(
                repository.split('/').count(),
                2,
                "{name}: {action} is not an owner/repository action"
            );
            assert!(
                version.len() == 40 && version.chars().all(|c| c.is_ascii_hexdigit()),
                "{name}: job {job}: {action} is not pinned to a commit"
            );
            if repository == "actions/checkout" {
                assert_eq!(
                    step["with"]["persist-credentials"],
                    serde_json::json!(false),
                    "{name}: job {job}: actions/checkout must not persist credentials"
                );
            }
        }
    }
}

#[test]
fn the_workflow_init_writes_and_the_repository_s_pass_what_zizmor_checks() {
    let workflow = TEMPLATES
        .iter()
        .find(|template| template.path == ".github/workflows/clawtest.yml")
        .unwrap();
    assert_what_zizmor_checks("templates/github-workflow.yml", workflow.contents);
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/workflows");
    let mut checked = 0;
    for entry in std::fs::read_dir(&folder).expect("the repository's workflows") {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_what_zizmor_checks(&path.display().to_string(), &text);
        checked += 1;
    }
    assert!(checked > 0);
}

#[test]
fn the_workflow_installs_cargo_clawtest_from_git_at_a_pinned_commit_then_runs_the_suite() {
    let workflow = TEMPLATES
        .iter()
        .find(|template| template.path == ".github/workflows/clawtest.yml")
        .unwrap();
    let document: serde_json::Value = serde_saphyr::from_str(workflow.contents).unwrap();
    let runs: Vec<&str> = document["jobs"]["clawtest"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect();
    let install = runs
        .iter()
        .find(|run| run.starts_with("cargo install"))
        .expect("an install step");
    let words: Vec<&str> = install.split_whitespace().collect();
    assert_eq!(
        words,
        [
            "cargo",
            "install",
            "--locked",
            "--git",
            "\"$CLAWTEST_GIT\"",
            "--rev",
            "\"$CLAWTEST_REV\"",
            "cargo-clawtest"
        ]
    );
    // The placeholders the user fills in are at the top, clearly marked.
    for variable in ["CLAWTEST_GIT", "CLAWTEST_REV"] {
        assert!(
            document["env"][variable]
                .as_str()
                .is_some_and(|value| value.contains("FILL-IN")),
            "{variable}"
        );
    }
    // The suite runs once per (cell, shard); the merge job makes one verdict and one JUnit
    // report of every shard.
    assert!(
        runs.iter()
            .any(|run| run.starts_with("cargo clawtest --cell \"$CELL\" --partition"))
    );
    let merged = document["jobs"]["merge"]["steps"]
        .as_array()
        .expect("a merge job")
        .iter()
        .filter_map(|step| step["run"].as_str())
        .any(|run| run.starts_with("cargo clawtest merge") && run.contains("--junit"));
    assert!(merged);
    // cargo is cached, keyed by the commit installed.
    let cached = document["jobs"]["clawtest"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|action| action.starts_with("actions/cache@"))
                && step["with"]["key"]
                    .as_str()
                    .is_some_and(|key| key.contains("env.CLAWTEST_REV"))
        });
    assert!(cached);
}

#[test]
fn the_model_scripts_answer_each_task_s_prompt() {
    let folder = initialised();
    let model =
        clawtest::llm::gateway::scripted::ScriptedModel::load(&folder.path().join("model-scripts"))
            .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(model.scripts(), 2);
    for task in ["todo-review", "offsite-reply"] {
        let task = clawtest::task::load(
            &folder.path().join(format!("tasks/{task}.yaml")),
            &Catalogue::builtin(),
        )
        .unwrap_or_else(|error| panic!("{}", error.plain()));
        let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": task.prompt}]});
        let answer = model.answer("/v1/chat/completions", body.to_string().as_bytes());
        assert_eq!(answer.status, 200, "{}", task.id);
    }
}
