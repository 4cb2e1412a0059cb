//! Test builders: a suite in a temporary folder (config, tasks, scripted cassettes), run
//! through the real `cargo-clawtest` binary against the real reference agent.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The repository root (tests read the demo suite from it).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-clawtest lives in the workspace")
        .to_path_buf()
}

/// The reference agent binary, built once if `cargo test` has not built it already.
pub fn reference_agent() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_BIN_EXE_cargo-clawtest")).with_file_name("reference-agent");
        if !path.exists() {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "reference-agent"])
                .current_dir(repository())
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building the reference agent failed");
        }
        path
    })
    .clone()
}

/// One model turn of a scripted trial.
pub enum Turn {
    /// The model calls these tools (name, arguments), in one assistant message.
    Call(Vec<(&'static str, Value)>),
    /// The model answers with this final text.
    Answer(&'static str),
}

/// The cassette interactions that make the reference agent play `turns`, for a task whose
/// prompt is `prompt`: the first request must carry the prompt, each later one the results
/// of the previous turn's calls.
pub fn script(prompt: &str, turns: &[Turn]) -> Value {
    let mut interactions = Vec::new();
    let mut previous_calls: Vec<String> = Vec::new();
    let mut next_call = 1;
    for (index, turn) in turns.iter().enumerate() {
        let request = if index == 0 {
            json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]})
        } else {
            json!({"messages": previous_calls.iter().map(|id| json!({"role": "tool", "tool_call_id": id})).collect::<Vec<_>>()})
        };
        let message = match turn {
            Turn::Call(calls) => {
                previous_calls = calls
                    .iter()
                    .map(|_| {
                        next_call += 1;
                        format!("call_{}", next_call - 1)
                    })
                    .collect();
                let tool_calls: Vec<Value> = calls
                    .iter()
                    .zip(&previous_calls)
                    .map(|((name, arguments), id)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}))
                    .collect();
                json!({"role": "assistant", "content": null, "tool_calls": tool_calls})
            }
            Turn::Answer(text) => json!({"role": "assistant", "content": text}),
        };
        interactions.push(json!({
            "request": {"body": request},
            "response": {"body": {"object": "chat.completion", "choices": [{"index": 0, "message": message}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}}}
        }));
    }
    Value::Array(interactions)
}

/// A suite in a temporary folder.
pub struct Suite {
    pub folder: tempfile::TempDir,
    config: String,
}

/// What a run printed and how it exited.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Suite {
    /// A suite whose harness is the reference agent.
    pub fn new() -> Suite {
        let config = format!(
            "tasks = [\"tasks/*.yaml\"]\n[harness]\ncommand = [{:?}]\n",
            reference_agent().display().to_string()
        );
        Suite {
            folder: tempfile::tempdir().expect("temporary folder"),
            config,
        }
    }

    /// Replaces the whole clawtest.toml.
    pub fn config(mut self, text: &str) -> Suite {
        self.config = text.to_string();
        self
    }

    /// Adds `tasks/<name>.yaml`.
    pub fn task(self, name: &str, yaml: &str) -> Suite {
        self.file(&format!("tasks/{name}.yaml"), yaml)
    }

    /// Copies a task of the demo suite, with its cassette unless `with_cassette` is false.
    pub fn demo_task(self, task_id: &str, with_cassette: bool) -> Suite {
        let demo = repository().join("examples/demo");
        let task =
            std::fs::read_to_string(demo.join(format!("tasks/{task_id}.yaml"))).expect("demo task");
        let suite = self.task(task_id, &task);
        if with_cassette {
            let cassette = std::fs::read_to_string(demo.join(format!("cassettes/{task_id}.yaml")))
                .expect("demo cassette");
            suite.file(&format!("cassettes/{task_id}.yaml"), &cassette)
        } else {
            suite
        }
    }

    /// Writes a cassette for `task_id`, one script per trial.
    pub fn cassette(self, task_id: &str, trials: Vec<Value>) -> Suite {
        let trials: Vec<Value> = trials
            .into_iter()
            .map(|interactions| json!({"interactions": interactions}))
            .collect();
        // JSON is YAML: the cassette reader takes it as it is.
        let text = serde_json::to_string_pretty(
            &json!({"version": 1, "task_id": task_id, "trials": trials}),
        )
        .expect("serialisable");
        self.file(&format!("cassettes/{task_id}.yaml"), &text)
    }

    pub fn file(self, relative: &str, text: &str) -> Suite {
        let path = self.folder.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("relative path has a parent"))
            .expect("create folder");
        std::fs::write(path, text).expect("write file");
        self
    }

    /// `file`, made executable: a harness the suite starts as `./relative`.
    pub fn program(self, relative: &str, text: &str) -> Suite {
        use std::os::unix::fs::PermissionsExt as _;
        let suite = self.file(relative, text);
        std::fs::set_permissions(suite.path(relative), std::fs::Permissions::from_mode(0o755))
            .expect("executable");
        suite
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.folder.path().join(relative)
    }

    /// Runs `cargo-clawtest` in the suite's folder.
    pub fn run(&self, arguments: &[&str]) -> Outcome {
        std::fs::write(self.folder.path().join("clawtest.toml"), &self.config)
            .expect("write config");
        run_in(self.folder.path(), arguments)
    }
}

/// The `cargo-clawtest` command for `suite`, not yet started (its config written).
pub fn command_in(folder: &Path, suite: &Suite, arguments: &[&str]) -> Command {
    std::fs::write(folder.join("clawtest.toml"), &suite.config).expect("write config");
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"));
    command.arg("clawtest").args(arguments).current_dir(folder);
    command
}

/// Runs `cargo-clawtest` in `folder`, as `cargo clawtest` would.
pub fn run_in(folder: &Path, arguments: &[&str]) -> Outcome {
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"))
        .arg("clawtest")
        .args(arguments)
        .current_dir(folder)
        .output()
        .expect("cargo-clawtest runs");
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs the demo suite as two shards (`--partition hash:1/2` and `hash:2/2`), each writing
/// its JSON results to `out/shard1.json` and `out/shard2.json`; returns those two paths.
pub fn demo_shards(out: &Path) -> [PathBuf; 2] {
    reference_agent();
    let demo = repository().join("examples/demo");
    [1, 2].map(|shard| {
        let file = out.join(format!("shard{shard}.json"));
        let part = run_in(
            &demo,
            &[
                "--no-build",
                "--jobs",
                "2",
                "--partition",
                &format!("hash:{shard}/2"),
                "--json",
                &file.display().to_string(),
            ],
        );
        assert_eq!(part.code, 0, "{part:#?}");
        file
    })
}

/// Every file of `folder` by name, with its text.
pub fn files(folder: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&path).unwrap(),
            )
        })
        .collect()
}

/// Parses a JUnit file written by a run.
pub fn junit(path: &Path) -> quick_junit::Report {
    let xml = std::fs::read_to_string(path).expect("JUnit written");
    quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit")
}
