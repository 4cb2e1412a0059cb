//! The capability suite (`examples/capabilities`): one task per capability of UniClawBench's
//! that mock services and workspace files can carry, replayed, and the run broken down by
//! capability in the terminal, the Markdown summary and the JSON results.

use serde_json::{Value, json};

use crate::support::{reference_agent, repository, run_in};

#[test]
fn the_capability_suite_passes_and_every_output_breaks_it_down_by_capability() {
    reference_agent();
    let out = tempfile::tempdir().unwrap();
    let (json_path, summary_path) = (
        out.path().join("results.json"),
        out.path().join("summary.md"),
    );
    let outcome = run_in(
        &repository().join("examples/capabilities"),
        &[
            "--no-build",
            "--snapshots",
            "--json",
            json_path.to_str().unwrap(),
            "--summary",
            summary_path.to_str().unwrap(),
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let table = "\ncapability      tasks   pass^2    mean\ncross_platform      1      1/1   1.000\nexploration         1      1/1   1.000\nlong_context        1      1/1   1.000\nskill_usage         1      1/1   1.000\n";
    assert!(outcome.stdout.contains(table), "{}", outcome.stdout);
    let summary = std::fs::read_to_string(&summary_path).unwrap();
    assert!(
        summary.contains("### By capability\n\n| capability | tasks | pass^2 | mean |\n|---|---:|---:|---:|\n| cross_platform | 1 | 1 | 1.000 |\n| exploration | 1 | 1 | 1.000 |\n| long_context | 1 | 1 | 1.000 |\n| skill_usage | 1 | 1 | 1.000 |\n"),
        "{summary}"
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let one = json!({"tasks": 1, "passed": 1, "mean_score": 1.0});
    assert_eq!(
        results["breakdowns"]["by_capability"],
        json!({"cross_platform": one, "exploration": one, "long_context": one, "skill_usage": one})
    );
}
