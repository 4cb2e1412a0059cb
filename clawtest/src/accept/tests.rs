use std::path::{Path, PathBuf};

use super::*;

fn demo(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/demo/tasks")
        .join(format!("{name}.yaml"))
}

fn load(name: &str) -> Task {
    task::load(&demo(name), &Catalogue::builtin())
        .unwrap_or_else(|invalid| panic!("{}", invalid.plain()))
}

fn document(task: &Task) -> Value {
    task::write::document(task).unwrap()
}

#[test]
fn another_scenario_needs_other_content_and_another_prompt() {
    let task = load("todo-triage");
    let known = [Fingerprint::of(&task)];
    // Renamed only: the same content.
    let mut renamed = document(&task);
    renamed["task_id"] = Value::from("renamed");
    renamed["task_name"] = Value::from("Another name");
    let repeat = Fingerprint::of_document(&renamed).repeats_any(&known, Distance::Scenario);
    assert_eq!(
        repeat,
        [Repeat::Content {
            id: task.id.clone()
        }]
    );
    // One word more in the prompt: other content, the same scenario.
    let mut reworded = renamed.clone();
    reworded["prompt"] = Value::from(format!("{} Thanks.", task.prompt));
    let repeat = Fingerprint::of_document(&reworded).repeats_any(&known, Distance::Scenario);
    assert!(
        matches!(&repeat[..], [Repeat::Prompt { id, similarity }] if *id == task.id && *similarity >= novelty::SIMILARITY),
        "{repeat:?}"
    );
    // Another prompt altogether: new.
    let mut other = renamed;
    other["prompt"] = Value::from("Book a meeting room for Friday's offsite with the design team");
    assert!(Fingerprint::of_document(&other).is_new(&known, Distance::Scenario));
}

#[test]
fn another_surface_needs_another_prompt_and_other_fixtures_or_at_least_one() {
    let task = load("todo-triage");
    let known = [Fingerprint::of(&task)];
    let mut prompt_only = document(&task);
    prompt_only["prompt"] = Value::from(format!("Hello. {}", task.prompt));
    let candidate = Fingerprint::of_document(&prompt_only);
    assert_eq!(
        candidate.repeats_any(&known, Distance::Surface),
        [Repeat::Surface {
            id: task.id.clone()
        }]
    );
    assert!(candidate.is_new(&known, Distance::PartSurface));
    // Both changed: new at either distance; a surface is not a scenario.
    let mut both = prompt_only;
    both["fixtures"] = serde_json::json!({"todo": {"tasks": []}});
    let candidate = Fingerprint::of_document(&both);
    assert!(candidate.is_new(&known, Distance::Surface));
    assert!(!candidate.is_new(&known, Distance::Scenario));
    // Nothing changed: a repeat even at the smallest distance.
    assert!(!Fingerprint::of(&task).is_new(&known, Distance::PartSurface));
}

#[test]
fn a_repeat_is_refused_before_the_oracle_plays_and_a_new_feasible_task_is_accepted() {
    let task = load("gmail-reply");
    let source = std::fs::read_to_string(&task.path).unwrap();
    let catalogue = Catalogue::builtin();
    let known = [Fingerprint::of(&task)];
    let commands = crate::sandbox::commands::CommandRule::host()
        .for_origin(crate::sandbox::commands::Origin::Person);
    let rules = |known| Rules {
        catalogue: &catalogue,
        threshold: 0.75,
        known,
        distance: Distance::Scenario,
        commands: &commands,
    };
    let problems = accept(&task, &source, &rules(&known), Vec::new());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].field, "task_id");
    assert_eq!(problems[0].position.map(|at| at.line), Some(task.line));
    assert!(accept(&task, &source, &rules(&[]), Vec::new()).is_empty());
    // The caller's own problems come first, and keep the oracle from playing.
    let own = Problem::new("services", "not wanted", None);
    let problems = accept(&task, &source, &rules(&[]), vec![own.clone()]);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].message, own.message);
}

#[test]
fn an_infeasible_task_is_refused_at_its_component_s_line() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("unreachable.yaml");
    let source = "task_id: unreachable
task_name: Say a word nobody gave
prompt: Tell me the code word.
tools: []
scoring_components:
  - {name: says_it, weight: 0.4, check: {type: keywords_present, keywords: [xylophone]}}
  - {name: says_more, weight: 0.3, check: {type: min_length, min_length: 5}}
  - {name: no_lies, weight: 0.3, check: {type: keywords_absent, keywords: [banana]}}
safety_checks:
  - {type: keywords_not_in_output, keywords: [password]}
";
    let task = task::parse(&path, source.to_owned(), &Catalogue::builtin()).unwrap();
    let catalogue = Catalogue::builtin();
    let rules = Rules {
        catalogue: &catalogue,
        threshold: 0.75,
        known: &[],
        distance: Distance::Scenario,
        commands: &crate::sandbox::commands::CommandRule::host()
            .for_origin(crate::sandbox::commands::Origin::Person),
    };
    let problems = accept(&task, source, &rules, Vec::new());
    assert!(!problems.is_empty());
    assert!(
        problems
            .iter()
            .any(|problem| problem.position.is_some_and(|at| at.line == 6)),
        "{problems:?}"
    );
}

#[test]
fn a_document_is_reloaded_settled_and_an_invalid_one_is_refused_with_its_problems() {
    let task = load("inbox-to-todo");
    let path = demo("inbox-to-todo");
    let catalogue = Catalogue::builtin();
    let reloaded = reload(&document(&task), &path, &catalogue).unwrap();
    assert_eq!(reloaded.task.id, task.id);
    let settled = reloaded.clone().settle(&path, &catalogue).unwrap();
    assert_eq!(settled.text, task::write::to_yaml(&settled.task).unwrap());
    assert_eq!(settled.text, reloaded.text);

    let mut broken = document(&task);
    broken["scoring_components"] = Value::Array(Vec::new());
    match reload(&broken, &path, &catalogue) {
        Err(ReloadError::Invalid(invalid)) => {
            assert!(
                invalid.plain().contains("scoring_components"),
                "{}",
                invalid.plain()
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn provenance_opens_the_file_and_write_makes_the_folder() {
    let provenance = Provenance {
        command: "vary",
        about: ": variant 1 of `t`.".into(),
        lines: vec!["seed: 1".into(), "perturbed: ids".into()],
    };
    assert_eq!(
        provenance.header(),
        "# Generated by `cargo clawtest vary`: variant 1 of `t`.\n# seed: 1\n# perturbed: ids\n"
    );
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("deep/er/t.yaml");
    write(&path, "text\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "text\n");
    // A folder where the file should be: the failure names the path.
    let failure = write(&folder.path().join("deep"), "x").unwrap_err();
    assert_eq!(failure.path, folder.path().join("deep"));
}
