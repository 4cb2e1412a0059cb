//! Bounds on what a suite, a results file or a command line can ask for (issue 28): numbers
//! out of range are refused with the field named, before anything is allocated or compared.

use serde_json::Value;

use crate::good_triage;
use crate::support::Suite;

/// A suite whose baseline run passes: one demo task with three good trials.
fn triage_suite() -> Suite {
    Suite::new().demo_task("todo-triage", false).cassette(
        "todo-triage",
        vec![good_triage(), good_triage(), good_triage()],
    )
}

#[test]
fn a_baseline_out_of_range_is_refused_with_its_field() {
    let suite = triage_suite();
    let saved = suite.run(&["--save-baseline", "baseline.json"]);
    assert_eq!(saved.code, 0, "{saved:#?}");
    let baseline: Value =
        serde_json::from_str(&std::fs::read_to_string(suite.path("baseline.json")).unwrap())
            .unwrap();
    let cases: [(&str, Value, &str); 4] = [
        (
            "/verdicts/0/k",
            Value::from(0),
            "verdicts[0].k is 0: expected at least 1 trial",
        ),
        (
            "/verdicts/0/passes",
            Value::from(5),
            "verdicts[0].passes is 5: more than its k of 3 trials",
        ),
        (
            "/verdicts/0/mean_score",
            Value::from(1e308),
            "verdicts[0].mean_score is 100000000",
        ),
        (
            "/pass_hat_k",
            Value::from(-1e308),
            "pass_hat_k is -10000000",
        ),
    ];
    for (pointer, value, said) in cases {
        let mut tampered = baseline.clone();
        *tampered.pointer_mut(pointer).expect(pointer) = value;
        std::fs::write(suite.path("tampered.json"), tampered.to_string()).unwrap();
        let outcome = suite.run(&["--baseline", "tampered.json"]);
        assert_eq!(outcome.code, 101, "{pointer}: {outcome:#?}");
        assert!(
            outcome
                .stderr
                .contains("tampered.json is not a clawtest results file")
                && outcome.stderr.contains(said),
            "{pointer}: {outcome:#?}"
        );
        // A shard of a merge is read the same way.
        let merged = suite.run(&["merge", "tampered.json"]);
        assert_ne!(merged.code, 0, "{pointer}: {merged:#?}");
        assert!(merged.stderr.contains(said), "{pointer}: {merged:#?}");
    }
    // The file as saved is still a good baseline.
    assert_eq!(suite.run(&["--baseline", "baseline.json"]).code, 0);
}
