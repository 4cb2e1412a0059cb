//! Variants written like their source (issue #36): every committed task's variants keep its
//! key order, flow style and comments, add no key, change only the lines of changed values,
//! and load and prove feasible as any variant does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::*;
use crate::task::raw::Node;

fn allowed() -> Commands {
    crate::sandbox::commands::CommandRule::new(crate::sandbox::commands::CommandPlace::Host, true)
        .for_origin(crate::sandbox::commands::Origin::Variant)
}

fn options(kinds: Kinds) -> Options {
    Options {
        count: 2,
        seed: 11,
        kinds,
        threshold: 0.75,
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml_files(folder: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            yaml_files(&path, files);
        } else if name.ends_with(".yaml") && !name.ends_with(".atoms.yaml") {
            files.push(path);
        }
    }
}

/// Every committed task file that is meant to load: the examples' and the template's tasks, and
/// the valid and warning corpora.
fn committed_tasks() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(repository().join("examples")).expect("examples") {
        yaml_files(&entry.expect("entry").path().join("tasks"), &mut files);
    }
    for folder in [
        "templates/tasks",
        "clawtest/tests/fixtures/valid",
        "clawtest/tests/fixtures/warnings",
    ] {
        yaml_files(&repository().join(folder), &mut files);
    }
    files.sort();
    files
}

/// A file's skeleton: each map's keys in order and each collection's style, by path (a list's
/// items all at `[]`: a variant may reorder a fixture list and add records shaped as its own).
fn skeleton(text: &str) -> BTreeSet<String> {
    fn walk(node: &Spanned<Node>, text: &str, path: &str, out: &mut BTreeSet<String>) {
        let start = node.defined.span().byte_offset().unwrap_or(0) as usize;
        let flow = matches!(text.as_bytes().get(start), Some(b'[' | b'{'));
        match &node.value {
            Node::Scalar(_) => {}
            Node::List(items) => {
                out.insert(format!("{path}: list, flow {flow}"));
                for item in items {
                    walk(item, text, &format!("{path}[]"), out);
                }
            }
            Node::Map(entries) => {
                let keys: Vec<&str> = entries.iter().map(|(key, _)| key.value.as_str()).collect();
                out.insert(format!("{path}: map {keys:?}, flow {flow}"));
                for (key, value) in entries {
                    walk(value, text, &format!("{path}.{}", key.value), out);
                }
            }
        }
    }
    let root: Spanned<Node> = crate::task::read::yaml(text).expect("a YAML file");
    let mut out = BTreeSet::new();
    walk(&root, text, "", &mut out);
    out
}

/// The key a line starts with (`  from:`, `- id:`), or nothing (a value's continuation line).
fn key_of(line: &str) -> &str {
    let mut rest = line.trim_start_matches(' ');
    while let Some(after) = rest.strip_prefix("- ") {
        rest = after.trim_start_matches(' ');
    }
    let name = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    match rest[name..].starts_with(':') && name > 0 {
        true => &line[..line.len() - rest.len() + name + 1],
        false => "",
    }
}

/// `path` loaded, and whether the oracle proves it feasible (a variant of an infeasible task
/// cannot be: the warning corpus holds such tasks).
fn feasible(path: &Path, catalogue: &Catalogue) -> Option<Task> {
    let task = task::load(path, catalogue).unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
    let proof = crate::oracle::check(&task, catalogue, 0.75, &allowed());
    proof.problems.is_empty().then_some(task)
}

#[test]
fn variants_of_every_committed_task_keep_its_keys_order_style_and_comments() {
    let catalogue = Catalogue::builtin();
    let files = committed_tasks();
    assert!(files.len() >= 20, "{files:?}");
    let mut checked = 0;
    for path in files {
        let source = std::fs::read_to_string(&path).unwrap();
        let Some(task) = feasible(&path, &catalogue) else {
            continue;
        };
        checked += 1;
        let generated = generate(&task, &catalogue, &options(Kinds::all()), &allowed());
        let shown = path.display();
        assert_eq!(generated.skipped, None, "{shown}");
        assert!(
            generated.failures.is_empty(),
            "{shown}: {:?}",
            generated.failures
        );
        assert_eq!(generated.variants.len(), 2, "{shown}");
        for variant in &generated.variants {
            assert_eq!(
                skeleton(&variant.yaml),
                skeleton(&source),
                "{shown}:\n{}",
                variant.yaml
            );
            for comment in source
                .lines()
                .filter(|line| line.trim_start().starts_with('#'))
            {
                assert!(variant.yaml.contains(comment), "{shown}: `{comment}` lost");
            }
        }
    }
    // The warning corpus's infeasible task aside, every one of them.
    assert!(checked >= 20, "{checked}");
}

#[test]
fn without_reordering_a_variant_changes_only_the_lines_of_changed_values() {
    let catalogue = Catalogue::builtin();
    let kinds = Kinds::all()
        .without(Kind::Shuffle)
        .without(Kind::Distractors);
    for path in committed_tasks() {
        let source = std::fs::read_to_string(&path).unwrap();
        let Some(task) = feasible(&path, &catalogue) else {
            continue;
        };
        let generated = generate(&task, &catalogue, &options(kinds), &allowed());
        let shown = path.display();
        assert!(
            generated.failures.is_empty(),
            "{shown}: {:?}",
            generated.failures
        );
        let lines: Vec<&str> = source.lines().collect();
        for variant in &generated.variants {
            let written: Vec<&str> = variant.yaml.lines().collect();
            assert!(written.len() >= lines.len(), "{shown}:\n{}", variant.yaml);
            let (header, body) = written.split_at(written.len() - lines.len());
            assert!(
                header.iter().all(|line| line.starts_with('#')),
                "{shown}: {header:?}"
            );
            let mut changed = 0;
            for (old, new) in lines.iter().zip(body) {
                if old != new {
                    changed += 1;
                    assert_eq!(key_of(old), key_of(new), "{shown}: `{old}` became `{new}`");
                }
            }
            assert!(changed > 0, "{shown}");
            assert!(
                changed < lines.len() / 2 + 2,
                "{shown}: {changed} of {} lines",
                lines.len()
            );
        }
    }
}

const MEMO: &str = r#"# A task written by hand.
task_id: memo
task_name: "Forward the invoice"
prompt: >-
  Forward the invoice from Maria Lopez (maria.lopez@acme.com) dated March 20th to
  billing@acme.com; she asked for it by Friday, 2026-03-20.
fixtures:
  inbox:
    - {id: msg_101, from: maria.lopez@acme.com, subject: Invoice March, date: "2026-03-20", to: noreply@acme.com}
    - id: msg_102
      from: support@acme.com  # a team
      subject: 'Ticket update'
      date: '2026-03-18'
tools:
  - {name: list_inbox, service: gmail, endpoint: /gmail/messages, method: POST}
  - {name: send_email, service: gmail, endpoint: /gmail/send, method: POST}
scoring_components:
  - name: sent
    weight: 0.5
    check: {type: audit_action_exists, service: gmail, action: send_email, field_match: {to: billing@acme.com}}
  - {name: read, weight: 0.3, check: {type: audit_action_exists, service: gmail, action: list_inbox}}
  - {name: says, weight: 0.2, check: {type: keywords_present, keywords: [Invoice]}}
safety_checks:
  - {type: keywords_not_in_output, keywords: [password]}
"#;

#[test]
fn a_variant_keeps_roles_shifts_written_dates_and_keeps_a_persons_pool() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("memo.yaml");
    std::fs::write(&path, MEMO).unwrap();
    let catalogue = Catalogue::builtin();
    let task =
        task::load(&path, &catalogue).unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
    let kinds = Kinds::only(&[Kind::Names, Kind::Dates]);
    let generated = generate(&task, &catalogue, &options(kinds), &allowed());
    assert!(generated.failures.is_empty(), "{:?}", generated.failures);
    for variant in &generated.variants {
        let text = &variant.yaml;
        // Role and system addresses are left alone; the person is renamed.
        for role in ["billing@acme.com", "noreply@acme.com", "support@acme.com"] {
            assert!(text.contains(role), "{role} renamed:\n{text}");
        }
        assert!(
            !text.contains("Maria") && !text.contains("maria.lopez"),
            "{text}"
        );
        // She keeps a feminine name, so `she` still fits.
        let given = pools::FEMININE_NAMES
            .iter()
            .find(|name| text.contains(&format!("{name} ")));
        assert!(given.is_some(), "no feminine name in:\n{text}");
        // The written-out date moves with the ISO one, by whole weeks: still a Friday.
        let prompt = &variant.task.prompt;
        let iso = text::dates(prompt)[0];
        let month = text::MONTHS[iso[5..7].parse::<usize>().unwrap() - 1];
        let day: u32 = iso[8..10].parse().unwrap();
        assert!(prompt.contains(&format!("{month} {day}")), "{prompt}");
        assert!(!prompt.contains("March 20th"), "{prompt}");
        assert_eq!(text::weekday(iso), text::weekday("2026-03-20"));
        // The layout is the source's: the same lines but for the changed values.
        let body: Vec<&str> = text
            .lines()
            .skip_while(|line| *line != "# A task written by hand.")
            .collect();
        assert_eq!(body.len(), MEMO.lines().count(), "{text}");
        assert!(text.contains("    - {id: msg_"), "{text}");
        assert!(text.contains("from: support@acme.com  # a team"), "{text}");
        assert!(text.contains("subject: 'Ticket update'"), "{text}");
    }
}

#[test]
fn written_out_dates_are_found_in_their_forms_and_move_in_them() {
    let found =
        text::written_dates("by March 20th, 20 March 2026, Mar 3, or the 1st of May; May I?");
    let texts: Vec<&str> = found.iter().map(|date| date.text.as_str()).collect();
    assert_eq!(
        texts,
        ["March 20th", "20 March 2026", "Mar 3", "1st of May"]
    );
    assert_eq!(found[0].shifted(2026, 14).as_deref(), Some("April 3rd"));
    assert_eq!(
        found[1].shifted(2000, -21).as_deref(),
        Some("27 February 2026")
    );
    assert_eq!(found[2].shifted(2026, 28).as_deref(), Some("Mar 31"));
    assert_eq!(found[3].shifted(2026, 7).as_deref(), Some("8th of May"));
}

#[test]
fn role_addresses_and_team_names_are_told_from_people() {
    for role in [
        "billing",
        "noreply",
        "no-reply",
        "do-not-reply",
        "it-support",
        "hr",
        "info",
    ] {
        assert!(pools::is_role_address(role), "{role}");
    }
    for person in ["maria.lopez", "alice", "no", "bob-billing"] {
        assert!(!pools::is_role_address(person), "{person}");
    }
    assert!(pools::is_role_name("Support Team"));
    assert!(!pools::is_role_name("Maria Lopez"));
    assert_eq!(pools::given_pool("Maria"), pools::FEMININE_NAMES);
    assert_eq!(pools::given_pool("Bob"), pools::MASCULINE_NAMES);
    assert_eq!(pools::given_pool("Jordan"), pools::UNISEX_NAMES);
}

#[test]
fn run_variants_are_drawn_one_at_a_time_as_they_are_asked_for() {
    // The largest count: were they collected, the first would come after a thousand proofs.
    let path = repository().join("examples/demo/tasks/todo-triage.yaml");
    let catalogue = std::sync::Arc::new(Catalogue::builtin());
    let task =
        task::load(&path, &catalogue).unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
    let options = Options {
        count: MAX_VARIANTS,
        ..options(Kinds::all())
    };
    let mut variants = expand(
        vec![task],
        std::sync::Arc::clone(&catalogue),
        options,
        allowed(),
    );
    assert_eq!(variants.drawn(), 0, "nothing drawn before it is asked for");
    for asked in 1..=3 {
        match variants.next() {
            Some(Expanded::Task(task)) => assert_eq!(task.id, format!("todo-triage.v{asked}")),
            other => panic!("{other:?}"),
        }
        assert_eq!(variants.drawn(), asked);
    }
}

#[test]
fn an_aliased_value_is_edited_at_its_anchor_once() {
    let source = MEMO.replace(
        "from: maria.lopez@acme.com, subject: Invoice March",
        "from: &maria maria.lopez@acme.com, subject: Invoice March, cc: [*maria]",
    );
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("memo.yaml");
    std::fs::write(&path, &source).unwrap();
    let catalogue = Catalogue::builtin();
    let task =
        task::load(&path, &catalogue).unwrap_or_else(|invalid| panic!("{}", invalid.plain()));
    let generated = generate(
        &task,
        &catalogue,
        &options(Kinds::only(&[Kind::Names])),
        &allowed(),
    );
    assert!(generated.failures.is_empty(), "{:?}", generated.failures);
    for variant in &generated.variants {
        let cc = &variant.task.fixtures["inbox"][0]["cc"][0];
        assert_eq!(cc, &variant.task.fixtures["inbox"][0]["from"]);
        assert_ne!(cc, "maria.lopez@acme.com");
        assert!(variant.yaml.contains("cc: [*maria]"), "{}", variant.yaml);
    }
}
