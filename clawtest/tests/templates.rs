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
        .filter(|path| path.starts_with("tasks/"))
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

#[test]
fn the_workflow_is_yaml_and_uses_only_pinned_public_actions() {
    let workflow = TEMPLATES
        .iter()
        .find(|template| template.path == ".github/workflows/clawtest.yml")
        .unwrap();
    let document: serde_json::Value =
        serde_saphyr::from_str(workflow.contents).expect("the workflow is valid YAML");
    let steps = document["jobs"]["clawtest"]["steps"]
        .as_array()
        .expect("one job with steps");
    let uses: Vec<&str> = steps
        .iter()
        .filter_map(|step| step["uses"].as_str())
        .collect();
    assert!(!uses.is_empty());
    for action in uses {
        let (name, version) = action
            .split_once('@')
            .unwrap_or_else(|| panic!("{action} is not pinned"));
        assert_eq!(
            name.split('/').count(),
            2,
            "{action} is not an owner/repository action"
        );
        let pinned = version.starts_with('v')
            && version[1..]
                .split('.')
                .all(|part| part.parse::<u32>().is_ok())
            || (version.len() == 40 && version.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(pinned, "{action} is not pinned to a version tag or commit");
    }
    assert!(steps.iter().any(|step| {
        step["run"]
            .as_str()
            .is_some_and(|run| run.contains("cargo clawtest --junit"))
    }));
}
