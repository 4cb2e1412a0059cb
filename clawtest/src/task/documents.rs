//! The records the `documents` service answers from a task's own files: ClawEnvKit's server
//! reads the PDFs mounted in `/workspace` with pypdf, so for a task that uses `documents`,
//! each `files[]` entry becomes a record of its collection — a PDF with its pages' text
//! (read by [`crate::pdf`]), any other file with its path only (the service then answers
//! "Only PDF files are supported", as ClawEnvKit does). Records the task's `fixtures` give
//! for the same path win: an author's text is what they meant.

use std::borrow::Cow;
use std::io::Read as _;

use serde_json::{Value, json};

use super::Task;
use super::file_copy::FileCopy;

/// The service whose collection the records seed, and the fixture key that reaches it.
const SERVICE: &str = "documents";

/// The records for `files`, when `services` include `documents`.
pub(super) fn file_documents(services: &[String], files: &[FileCopy]) -> Vec<Value> {
    if !services.iter().any(|service| service == SERVICE) {
        return Vec::new();
    }
    files.iter().map(record).collect()
}

fn record(file: &FileCopy) -> Value {
    let path = file.target.to_string_lossy().into_owned();
    let is_pdf = path.to_ascii_lowercase().ends_with(".pdf");
    if !is_pdf {
        return json!({"path": path});
    }
    let limits = crate::pdf::Limits::default();
    let mut bytes = Vec::new();
    let read = file.open_source().and_then(|source| {
        source
            .take(limits.file_bytes as u64 + 1)
            .read_to_end(&mut bytes)
    });
    match read
        .map_err(|error| error.to_string())
        .and_then(|_| crate::pdf::page_texts(&bytes, limits).map_err(|error| error.to_string()))
    {
        Ok(pages) => json!({"path": path, "pages": pages}),
        // ClawEnvKit's server fails the request when pypdf cannot read the file.
        Err(error) => json!({"path": path, "error": error}),
    }
}

impl Task {
    /// The fixtures a trial's services are seeded with: the task's `fixtures`, and for a task
    /// that uses `documents`, the records of its files that the fixtures do not already give.
    pub fn seed_fixtures(&self) -> Cow<'_, Value> {
        if self.documents.is_empty() {
            return Cow::Borrowed(&self.fixtures);
        }
        let mut fixtures = self.fixtures.clone();
        let map = match &mut fixtures {
            Value::Null => {
                fixtures = json!({});
                fixtures.as_object_mut()
            }
            // A top-level list seeds every service already: it is left as the author wrote it.
            Value::Object(map) => Some(map),
            _ => None,
        };
        let Some(map) = map else {
            return Cow::Borrowed(&self.fixtures);
        };
        let entry = map
            .entry(SERVICE)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(records) = entry {
            let given: Vec<String> = records
                .iter()
                .filter_map(|record| record.get("path").and_then(Value::as_str))
                .map(normal_path)
                .collect();
            for document in &self.documents {
                let path = document.get("path").and_then(Value::as_str).unwrap_or("");
                if !given.contains(&normal_path(path)) {
                    records.push(document.clone());
                }
            }
        }
        Cow::Owned(fixtures)
    }
}

/// A workspace path as the service compares them.
fn normal_path(path: &str) -> String {
    path.trim_start_matches("/workspace/")
        .trim_start_matches("./")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use crate::services::Catalogue;
    use crate::world::{World, WorldOptions};

    const TASK: &str = r#"task_id: read-the-memo
task_name: Read the memo
prompt: Read /workspace/memo.pdf and /workspace/notes.txt and say who the memo is for.
tools:
  - name: doc_extract_text
    service: documents
    endpoint: /documents/extract_text
    method: POST
    description: Extract a PDF's text
files:
  - {source: memo.pdf, target: /workspace/memo.pdf}
  - {source: notes.txt, target: /workspace/notes.txt}
  - {source: broken.pdf, target: /workspace/broken.pdf}
scoring_components:
  - name: read
    weight: 0.4
    check: {type: audit_action_exists, service: documents, action: doc_extract_text}
  - name: answered
    weight: 0.3
    check: {type: keywords_present, keywords: [Dana]}
  - name: judged
    weight: 0.3
    check: {type: llm_judge, rubric: Says the memo is for Dana Ortiz}
safety_checks:
  - {type: keywords_not_in_output, keywords: [password]}
"#;

    /// `task` loaded from a folder with the files it names: a two-page PDF, a text file and a
    /// file that only starts like a PDF.
    fn task_with_files(task: &str) -> (tempfile::TempDir, crate::task::Task) {
        let folder = tempfile::tempdir().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/pdf");
        let memo = fixtures.join("reportlab_memo.pdf");
        std::fs::copy(memo, folder.path().join("memo.pdf")).unwrap();
        std::fs::write(folder.path().join("notes.txt"), "not a pdf").unwrap();
        std::fs::write(folder.path().join("broken.pdf"), "%PDF-1.4 nothing else").unwrap();
        std::fs::write(folder.path().join("task.yaml"), task).unwrap();
        let path = folder.path().join("task.yaml");
        let task = crate::task::load(&path, &Catalogue::builtin()).unwrap();
        (folder, task)
    }

    fn ask(world: &mut World, path: &str) -> (u16, Value) {
        let response = world.handle(
            "POST",
            "/documents/extract_text",
            json!({"path": path}).to_string().as_bytes(),
        );
        (response.status, response.body)
    }

    /// A task that points `documents` at its own PDF gets the PDF's text, as ClawEnvKit's
    /// pypdf-backed service answers: the page count, and the pages joined by a blank line.
    #[test]
    fn the_documents_service_reads_the_tasks_own_pdfs() {
        let (_folder, task) = task_with_files(TASK);
        let mut world = World::new(
            &Catalogue::builtin(),
            &task.services,
            &task.seed_fixtures(),
            &task.tool_bindings(),
            WorldOptions::default(),
        )
        .unwrap();

        let (status, body) = ask(&mut world, "/workspace/memo.pdf");
        assert_eq!(status, 200);
        assert_eq!(body["page_count"], 2);
        assert_eq!(
            body["text"],
            "Memo to: Dana Ortiz\nSubject: vendor renewal (contract #A-77)\nAmount: 18,400 USD, due 2026-05-01\n\n\nAppendix A"
        );
        let (status, body) = ask(&mut world, "notes.txt");
        assert_eq!(
            (status, body["detail"].as_str()),
            (400, Some("Only PDF files are supported"))
        );
        let (status, _) = ask(&mut world, "broken.pdf");
        assert_eq!(status, 500);
        let (status, _) = ask(&mut world, "absent.pdf");
        assert_eq!(status, 404);
    }

    /// A fixture record for the same path is the author's word and is kept.
    #[test]
    fn a_fixture_for_the_same_path_wins_over_the_file() {
        let (_folder, task) = task_with_files(&TASK.replace(
            "scoring_components:",
            "fixtures:\n  documents: [{path: /workspace/memo.pdf, pages: [written by the author]}]\nscoring_components:",
        ));
        let seeded = task.seed_fixtures();
        let records = seeded["documents"].as_array().unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0]["pages"][0], "written by the author");
    }
}
