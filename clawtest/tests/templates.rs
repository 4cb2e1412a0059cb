//! The files in templates/ stay valid: the configuration parses and the task validates.

use std::path::{Path, PathBuf};

use clawtest::config::Config;
use clawtest::services::Catalogue;

fn templates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates")
}

#[test]
fn the_configuration_template_parses() {
    let config = Config::from_file(&templates().join("clawtest.toml"))
        .expect("templates/clawtest.toml is valid");
    assert_eq!(config.run.trials, 3);
    assert_eq!(config.tasks, ["tasks/**/*.yaml"]);
}

#[test]
fn the_task_template_validates() {
    let task = clawtest::spec::load(&templates().join("task.yaml"), &Catalogue::builtin())
        .unwrap_or_else(|error| panic!("{}", error.plain()));
    assert_eq!(task.id, "todo-review");
    assert_eq!(task.services, ["todo"]);
}
