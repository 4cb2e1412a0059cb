//! `cargo clawtest schema`: the JSON Schema of task.yaml, for editors.

use super::Outcome;

pub fn run() -> Outcome {
    out!("{}", clawtest::task::schema::task_schema_text());
    Ok(())
}
