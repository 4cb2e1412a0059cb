//! The committed JSON Schema (`schema/task.schema.json`, what editors are pointed at) is the
//! one `cargo clawtest schema` prints: a change to the task format without regenerating it
//! fails here.

use std::path::PathBuf;

use clawtest::task::schema::task_schema_text;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/task.schema.json")
}

#[test]
fn the_committed_schema_is_current() {
    let path = committed_path();
    let current = task_schema_text();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == current {
        return;
    }
    if std::env::var_os("CLAWTEST_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &current).expect("write schema/task.schema.json");
        return;
    }
    panic!(
        "{} is stale: it differs from what `cargo clawtest schema` prints.\n\
         Regenerate it with `cargo run -p cargo-clawtest -- clawtest schema > schema/task.schema.json` \
         (or run this test with CLAWTEST_UPDATE_SCHEMA=1) and commit it.",
        path.display()
    );
}

#[test]
fn the_schema_names_every_check_type_and_safety_type() {
    let schema: serde_json::Value =
        serde_json::from_str(&task_schema_text()).expect("the schema is JSON");
    let constants = |definition: &str| -> Vec<String> {
        schema["$defs"][definition]["oneOf"]
            .as_array()
            .expect("a oneOf of variants")
            .iter()
            .map(|variant| {
                variant["properties"]["type"]["const"]
                    .as_str()
                    .expect("a type constant")
                    .to_string()
            })
            .collect()
    };
    assert_eq!(constants("CheckEntry"), clawtest::task::check::CHECK_TYPES);
    assert_eq!(
        constants("SafetyCheckEntry"),
        clawtest::task::check::SAFETY_TYPES
    );
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let required = schema["required"].as_array().expect("required fields");
    for field in [
        "task_id",
        "task_name",
        "prompt",
        "scoring_components",
        "safety_checks",
    ] {
        assert!(required.iter().any(|name| name == field), "{field}");
    }
}
