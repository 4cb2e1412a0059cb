//! The harness × model matrix, end to end: examples/matrix (the reference agent with and
//! without its retries × a scripted model that calls the right tools and one that does not,
//! replayed per cell under faults), its table, disagreements and attribution; `--cell`; and
//! `merge` of shards of several cells.

use std::path::Path;

use serde_json::Value;

use crate::support::{reference_agent, repository, run_in};

fn example() -> std::path::PathBuf {
    repository().join("examples/matrix")
}

fn results(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn attribution<'a>(results: &'a Value, group: &str, measure: &str) -> &'a Value {
    results["matrix"]["attribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["group"] == group && entry["measure"] == measure)
        .unwrap_or_else(|| panic!("no attribution of {measure} for {group}"))
}

/// The known answer: the retrying harness recovers from the faults the bare one does not,
/// whatever the model; the right-tool model completes what the wrong-tool one does not,
/// whatever the harness.
#[test]
fn the_example_puts_the_robustness_gap_on_the_harness_and_the_completion_gap_on_the_model() {
    reference_agent();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("results.json");
    let junit = out.path().join("junit.xml");
    let html = out.path().join("report");
    let outcome = run_in(
        &example(),
        &[
            "--no-build",
            "--jobs",
            "2",
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    // Three of the four cells fail their tasks: the run fails, as a merge would be blocked.
    assert_eq!(outcome.code, 100, "{}\n{}", outcome.stdout, outcome.stderr);
    let results = results(&json);
    for group in ["all", "category:workflow", "capability:skill_usage"] {
        let robustness = attribution(&results, group, "robustness");
        assert_eq!(robustness["harness"], 1.0, "{group}: {robustness}");
        assert!(robustness["harness_effects"]["retrying"].as_f64().unwrap() > 0.0);
        let completion = attribution(&results, group, "completion");
        assert!(
            completion["model"].as_f64().unwrap() > 0.9,
            "{group}: {completion}"
        );
        assert!(completion["model_effects"]["right-tool"].as_f64().unwrap() > 0.0);
    }
    // Every verdict names its cell, with the harness's digest.
    for verdict in results["verdicts"].as_array().unwrap() {
        let cell = &verdict["cell"];
        assert!(
            cell["harness"].is_string() && cell["model"].is_string(),
            "{verdict}"
        );
        assert_eq!(cell["harness_digest"].as_str().unwrap().len(), 12);
    }
    let report = crate::support::junit(&junit);
    let suites: Vec<&str> = report
        .test_suites
        .iter()
        .map(|suite| suite.name.as_str())
        .collect();
    assert_eq!(
        suites,
        [
            "clawtest",
            "clawtest bare/right-tool",
            "clawtest bare/wrong-tool",
            "clawtest retrying/right-tool",
            "clawtest retrying/wrong-tool"
        ]
    );
    // The report's heatmap, and the disagreements linked to each cell's trials, whose
    // trajectories were found in the cell's folder.
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(page.contains("<table class=\"heatmap\">"));
    assert!(page.contains("<a href=\"#task-bare/right-tool/offsite-reply\">bare/right-tool</a>"));
    assert!(page.contains("id=\"task-bare/right-tool/offsite-reply\""));
    assert!(!page.contains("No trajectory saved"));
    let matrix = &outcome.stdout[outcome.stdout.find("matrix: harness").unwrap()..];
    insta::assert_snapshot!("matrix_example", matrix);
}

/// `--cell` runs the cells its glob matches, and a glob that matches none names them all.
#[test]
fn a_cell_glob_runs_a_subset_of_the_cells() {
    reference_agent();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("results.json");
    let outcome = run_in(
        &example(),
        &[
            "--no-build",
            "--cell",
            "retrying/right-*",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let results = results(&json);
    let cells: Vec<String> = results["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            format!(
                "{}/{}",
                cell["harness"].as_str().unwrap(),
                cell["model"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(cells, ["retrying/right-tool"]);
    let outcome = run_in(&example(), &["--no-build", "--cell", "nobody/*"]);
    assert_ne!(outcome.code, 0);
    // miette wraps the message at a width, and where depends on the path's length before it
    // (a cell's name can be split at its `-`): the words are looked for with the wrapping
    // (line ends, the margin's `│`, spaces) taken out.
    let flat: String = outcome
        .stderr
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    assert!(
        [
            "matched",
            "bare/right-tool",
            "bare/wrong-tool",
            "retrying/right-tool",
            "retrying/wrong-tool"
        ]
        .iter()
        .all(|word| flat.contains(word)),
        "{}",
        outcome.stderr
    );
}

/// Shards of cells merge into the matrix of the whole run; a cell's missing shard is named.
#[test]
fn merge_combines_shards_of_several_cells_and_refuses_a_cell_with_a_shard_missing() {
    reference_agent();
    let out = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (cells, shard) in [
        ("retrying/*", "hash:1/2"),
        ("retrying/*", "hash:2/2"),
        ("bare/*", "hash:1/2"),
        ("bare/*", "hash:2/2"),
    ] {
        let path = out.path().join(format!(
            "{}-{}.json",
            cells.replace("/*", ""),
            shard.replace([':', '/'], "-")
        ));
        let outcome = run_in(
            &example(),
            &[
                "--no-build",
                "--cell",
                cells,
                "--partition",
                shard,
                "--json",
                path.to_str().unwrap(),
            ],
        );
        assert!(
            outcome.code == 0 || outcome.code == 100,
            "{}",
            outcome.stderr
        );
        files.push(path);
    }
    let whole = out.path().join("whole.json");
    let mut arguments = vec![
        "merge".to_string(),
        "--json".into(),
        whole.display().to_string(),
    ];
    arguments.extend(files.iter().map(|file| file.display().to_string()));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let merged = run_in(out.path(), &arguments);
    assert_eq!(merged.code, 100, "{}\n{}", merged.stdout, merged.stderr);
    let whole = results(&whole);
    assert_eq!(whole["matrix"]["cells"].as_array().unwrap().len(), 4);
    assert_eq!(attribution(&whole, "all", "robustness")["harness"], 1.0);
    assert_eq!(whole["verdicts"].as_array().unwrap().len(), 8);

    let mut arguments = vec!["merge".to_string()];
    arguments.extend(files.iter().take(3).map(|file| file.display().to_string()));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let incomplete = run_in(out.path(), &arguments);
    assert_ne!(incomplete.code, 0);
    assert!(
        incomplete.stderr.contains("hash:2/2 missing"),
        "{}",
        incomplete.stderr
    );
}

/// examples/matrix copied to `folder` with `gates` added to its configuration, its harnesses
/// started from the reference agent built for the tests; the cassettes of the retrying
/// harness's cells only.
fn example_with_gates(folder: &Path, gates: &str) {
    let agent = reference_agent();
    // Built already: a copy outside the workspace has no `cargo build -p` to run.
    let config: String = std::fs::read_to_string(example().join("clawtest.toml"))
        .unwrap()
        .replace(
            "${CARGO_TARGET_DIR}/debug/reference-agent",
            &agent.display().to_string(),
        )
        .lines()
        .filter(|line| !line.starts_with("build = "))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(folder.join("clawtest.toml"), format!("{config}\n{gates}")).unwrap();
    for part in [
        "tasks",
        "cassettes/retrying/right-tool",
        "cassettes/retrying/wrong-tool",
    ] {
        std::fs::create_dir_all(folder.join(part)).unwrap();
        for entry in std::fs::read_dir(example().join(part)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), folder.join(part).join(entry.file_name())).unwrap();
        }
    }
}

/// Runs the cells `glob` matches of the suite in `folder`, its results written to `json`.
fn run_cells(folder: &Path, glob: &str, json: &Path) -> crate::support::Outcome {
    run_in(
        folder,
        &[
            "--no-build",
            "--cell",
            glob,
            "--json",
            json.to_str().unwrap(),
        ],
    )
}

const GATES: &str = r#"[gates.cells."retrying/*"]
min_robustness = 0.9

[[gates.change]]
from = "retrying/right-tool"
to = "retrying/wrong-tool"
measure = "pass_hat_k"
min = -0.05
"#;

/// A cell gate holds over each cell its glob matches; a change gate fails the run, in the
/// terminal, the Markdown summary, the annotations and the exit code; a merge of results that
/// lack a cell a change gate names fails it.
#[test]
fn gates_per_cell_and_on_the_change_between_cells_decide_the_exit_code() {
    let suite = tempfile::tempdir().unwrap();
    example_with_gates(suite.path(), GATES);
    let summary = suite.path().join("summary.md");
    let json = suite.path().join("results.json");
    let outcome = run_in(
        suite.path(),
        &[
            "--no-build",
            "--cell",
            "retrying/*",
            "--annotations",
            "--summary",
            summary.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(outcome.code, 100, "{}\n{}", outcome.stdout, outcome.stderr);
    let gates: Vec<&str> = outcome
        .stdout
        .lines()
        .filter(|line| line.starts_with("gate ") || line.starts_with("::error title=gate"))
        .collect();
    insta::assert_snapshot!("matrix_gates", gates.join("\n"));
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.contains(
            "| retrying/right-tool → retrying/wrong-tool: pass_hat_k change.min | -0.05 | -1.000 | **failed** |"
        ),
        "{markdown}"
    );
    let change = &results(&json)["gates"][2];
    assert_eq!(change["scope"]["kind"], "change", "{change}");
    assert_eq!(change["actual"], -1.0);

    // The right-tool cell alone passes; merged alone, the change gate has no cell to compare
    // with, and the merge fails on it alone.
    let alone = suite.path().join("alone.json");
    let outcome = run_cells(suite.path(), "retrying/right-tool", &alone);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(
        outcome
            .stdout
            .contains("gate retrying/right-tool: min_robustness: 1.000 (threshold 0.9) held"),
        "{}",
        outcome.stdout
    );
    let merged = run_in(suite.path(), &["merge", alone.to_str().unwrap()]);
    assert_eq!(merged.code, 100, "{}\n{}", merged.stdout, merged.stderr);
    assert!(
        merged.stdout.contains(
            "gate retrying/right-tool → retrying/wrong-tool: pass_hat_k change.min not met (nothing to measure)"
        ),
        "{}",
        merged.stdout
    );
}

/// `report --clawenvkit` writes a matrix run's results in ClawEnvKit's layout.
#[test]
fn report_writes_the_results_in_clawenvkits_layout() {
    let suite = tempfile::tempdir().unwrap();
    example_with_gates(suite.path(), "");
    let json = suite.path().join("results.json");
    let outcome = run_cells(suite.path(), "retrying/*", &json);
    assert_eq!(outcome.code, 100, "{}\n{}", outcome.stdout, outcome.stderr);
    let out = suite.path().join("clawenvkit");
    let outcome = run_in(
        suite.path(),
        &[
            "report",
            json.to_str().unwrap(),
            "--clawenvkit",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(
        outcome.stdout.contains("wrote 4 grading.json"),
        "{}",
        outcome.stdout
    );
    let mut files = Vec::new();
    for model in ["right-tool", "wrong-tool"] {
        let cell = out.join("retrying").join(model);
        files.push(format!(
            "== retrying/{model}/summary.json\n{}",
            std::fs::read_to_string(cell.join("summary.json")).unwrap()
        ));
        for task in ["offsite-reply", "todo-review"] {
            for (name, text) in crate::support::files(&cell.join(task)) {
                files.push(format!("== retrying/{model}/{task}/{name}\n{text}"));
            }
        }
    }
    insta::assert_snapshot!("matrix_clawenvkit", files.join("\n"));
}

/// `cassettes` acts on each cell's folder: the status replays every cell (or those `--cell`
/// picks) and names a missing cassette by its cell's path; `prune` removes a cell's unused one.
#[test]
fn cassettes_are_checked_and_pruned_per_cell() {
    let suite = tempfile::tempdir().unwrap();
    example_with_gates(suite.path(), "");
    let retrying = run_in(suite.path(), &["cassettes", "--cell", "retrying/*"]);
    assert_eq!(retrying.code, 0, "{}\n{}", retrying.stdout, retrying.stderr);
    for cell in ["retrying/right-tool", "retrying/wrong-tool"] {
        assert!(
            retrying.stdout.contains(&format!("== cell {cell}")),
            "{}",
            retrying.stdout
        );
    }
    assert!(
        retrying
            .stdout
            .contains("cassettes/retrying/wrong-tool/todo-review.yaml"),
        "{}",
        retrying.stdout
    );
    // The bare harness's cells have no cassettes in this copy.
    let every = run_in(suite.path(), &["cassettes"]);
    assert_eq!(every.code, 100, "{}\n{}", every.stdout, every.stderr);
    assert!(
        every.stdout.contains("== cell bare/right-tool"),
        "{}",
        every.stdout
    );
    let missing = every
        .stdout
        .lines()
        .find(|line| line.starts_with("cassettes/bare/right-tool/offsite-reply.yaml"))
        .unwrap_or_else(|| panic!("{}", every.stdout));
    assert!(missing.contains("missing"), "{missing}");

    // A cassette of a task the suite no longer has.
    let unused = suite.path().join("cassettes/retrying/wrong-tool/gone.yaml");
    let recorded = std::fs::read_to_string(unused.with_file_name("todo-review.yaml")).unwrap();
    std::fs::write(
        &unused,
        recorded.replace("task_id: todo-review", "task_id: gone"),
    )
    .unwrap();
    let pruned = run_in(
        suite.path(),
        &["cassettes", "prune", "--cell", "retrying/wrong-tool"],
    );
    assert_eq!(pruned.code, 0, "{}\n{}", pruned.stdout, pruned.stderr);
    assert!(!unused.exists(), "{}", pruned.stdout);
    assert!(
        suite
            .path()
            .join("cassettes/retrying/wrong-tool/todo-review.yaml")
            .exists()
    );
}

/// `--snapshots` in a matrix: each cell's grade snapshots in its own folder, every new one
/// named by its cell in the run's result; accepted (as `cargo insta review` does, the
/// `.snap.new` files renamed), they no longer fail the run.
#[test]
fn grade_snapshots_are_compared_and_named_per_cell() {
    let suite = tempfile::tempdir().unwrap();
    example_with_gates(suite.path(), "");
    let arguments = ["--no-build", "--cell", "retrying/*", "--snapshots"];
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"));
    command
        .arg("clawtest")
        .args(arguments)
        .current_dir(suite.path())
        // Outside CI insta writes a `.snap.new` for a new snapshot.
        .env_remove("CI")
        .env_remove("INSTA_UPDATE");
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(100), "{stdout}");
    let result = stdout
        .lines()
        .find(|line| line.starts_with("matrix result:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        result.contains(
            "4 new snapshot(s) (retrying/right-tool/offsite-reply, retrying/right-tool/todo-review, retrying/wrong-tool/offsite-reply, retrying/wrong-tool/todo-review)"
        ),
        "{result}"
    );
    for cell in ["right-tool", "wrong-tool"] {
        for task in ["offsite-reply", "todo-review"] {
            let pending = suite
                .path()
                .join(format!("snapshots/retrying/{cell}/{task}.snap.new"));
            assert!(pending.is_file(), "{}", pending.display());
            std::fs::rename(&pending, pending.with_extension("")).unwrap();
        }
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let result = stdout
        .lines()
        .find(|line| line.starts_with("matrix result:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    // The wrong tool still fails its tasks; no snapshot fails the run any more.
    assert!(!result.contains("snapshot"), "{result}");
    assert!(result.contains("failed pass^3"), "{result}");
}
