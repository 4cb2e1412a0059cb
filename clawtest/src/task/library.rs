//! The suite's service library: the service descriptions in the `services/` folder beside
//! `clawtest.toml`, one file a service (`services/<name>.yaml`, the format of the built-in
//! catalogue), served next to the built-in ones to every task of the suite, which names them
//! in `tools` and `services:` as it names a built-in service. `generate` writes a service it
//! had described for a missing name there once (with its provenance as comments), and later
//! runs find it in the catalogue instead of asking for it again.
//!
//! A file is read as a task file is (a regular file, not a link, within the size limit,
//! UTF-8, YAML within the same budgets), then checked as a task-local service is; a bad one
//! is an [`InvalidTask`] at its line, and the others are still served.

use std::path::{Path, PathBuf};

use super::error::{InvalidTask, Position, Problem};
use super::read;
use crate::services::{Catalogue, ServiceDescription};

/// The library's folder, relative to the suite root.
pub const FOLDER: &str = "services";

/// The suite's catalogue: the base's services and the library's.
#[derive(Debug)]
pub struct Library {
    /// The base catalogue with every good file's service.
    pub catalogue: Catalogue,
    /// The library's services, by name, in file order.
    pub names: Vec<String>,
    /// The files that could not be used, each with its problems.
    pub invalid: Vec<InvalidTask>,
}

/// The library of the suite rooted at `root` over `base`: no folder is an empty library.
pub fn load(root: &Path, base: &Catalogue) -> Library {
    let mut library = Library {
        catalogue: base.clone(),
        names: Vec::new(),
        invalid: Vec::new(),
    };
    for path in files(&root.join(FOLDER)) {
        let shown = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        match read_one(&path, &library.catalogue) {
            Ok((description, catalogue)) => {
                library.names.push(description.name.clone());
                library.catalogue = catalogue;
            }
            Err(mut invalid) => {
                invalid.set_path(shown);
                library.invalid.push(*invalid);
            }
        }
    }
    library
}

/// The `.yaml` and `.yml` files of `folder`, sorted (none when it cannot be listed).
fn files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml" || extension == "yml")
        })
        .collect();
    files.sort();
    files
}

/// One library file, read, parsed and checked: its description and `catalogue` with it.
fn read_one(
    path: &Path,
    catalogue: &Catalogue,
) -> Result<(ServiceDescription, Catalogue), Box<InvalidTask>> {
    let invalid =
        |text: String, problem: Problem| Box::new(InvalidTask::new(path, text, vec![problem]));
    // A service is served to every task of the suite: a link (to a file a pull request did
    // not show) is not followed. Then the same reader as a task file's (a special file, a
    // huge file are refused).
    if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        let problem = Problem::new(
            "(file)",
            "the file is a symbolic link; a library service is read from a file of `services/` itself",
            Some(Position::START),
        )
        .with_help("replace the link with the file it points to");
        return Err(invalid(String::new(), problem));
    }
    let bytes = read::read_bytes(path).map_err(|problem| invalid(String::new(), *problem))?;
    let text = match read::text(bytes) {
        Ok(text) => text,
        Err((problem, text)) => return Err(invalid(text, *problem)),
    };
    let parsed = std::thread::scope(|scope| {
        super::parse_thread()
            .spawn_scoped(scope, || read::yaml::<ServiceDescription>(&text))
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
    });
    let description = match parsed {
        Ok(Ok(description)) => description,
        Ok(Err(problem)) => {
            let problem = problem.with_help(
                "a service description is a map of name, description, collections and routes, as a task's `services:` entry (docs/task-format.md)",
            );
            return Err(invalid(text, problem));
        }
        Err(error) => {
            let problem = Problem::new(
                "(file)",
                format!("cannot start a thread to read the file: {error}"),
                None,
            );
            return Err(invalid(text, problem));
        }
    };
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned());
    if stem.as_deref() != Some(description.name.as_str()) {
        let problem = Problem::new(
            "name",
            format!(
                "the service is named `{}` in a file named `{}`",
                description.name,
                path.file_name()
                    .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
            ),
            name_position(&text),
        )
        .with_help(format!(
            "name the file `{}.yaml`, or the service after its file",
            description.name
        ));
        return Err(invalid(text, problem));
    }
    match catalogue.with(vec![description.clone()]) {
        Ok(extended) => Ok((description, extended)),
        Err(error) => {
            let problem = Problem::new("name", error.to_string(), name_position(&text)).with_help(
                "a library service must not have the name of a built-in service or of another file of `services/`, and its routes must agree with its collections",
            );
            Err(invalid(text, problem))
        }
    }
}

/// Where `name:` is written at the top level of `text`.
fn name_position(text: &str) -> Option<Position> {
    let line = text.lines().position(|line| line.starts_with("name:"))?;
    Some(Position {
        line: line as u64 + 1,
        column: 1,
        span: None,
    })
}

/// Writes `description` to the library of the suite at `root`, after the comments of
/// `header` (its provenance), synced and never through a link: the file's path.
pub fn write(
    root: &Path,
    description: &ServiceDescription,
    header: &str,
) -> std::io::Result<PathBuf> {
    let path = root.join(FOLDER).join(format!("{}.yaml", description.name));
    let value = serde_json::to_value(description).map_err(std::io::Error::other)?;
    let body = super::write::text(&value).map_err(std::io::Error::other)?;
    crate::persist::write(
        &path,
        format!("{header}{body}").as_bytes(),
        crate::persist::Durability::Recording,
    )?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYROLL: &str = "name: payroll\ndescription: Payslips\ncollections:\n  - {name: payslips, id_field: payslip_id, fixture_keys: [payslips]}\nroutes:\n  - endpoint: /payroll/payslips\n    action: list_payslips\n    body: optional\n    operation: {kind: list, collection: payslips}\n    response: {payslips: \"${items}\"}\n";

    fn suite(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(FOLDER)).unwrap();
        for (name, text) in files {
            std::fs::write(root.path().join(FOLDER).join(name), text).unwrap();
        }
        root
    }

    #[test]
    fn a_library_service_is_served_beside_the_built_in_ones() {
        let root = suite(&[("payroll.yaml", PAYROLL)]);
        let library = load(root.path(), &Catalogue::builtin());
        assert!(library.invalid.is_empty(), "{:?}", library.invalid);
        assert_eq!(library.names, ["payroll"]);
        assert!(library.catalogue.get("payroll").is_some());
        assert!(library.catalogue.get("todo").is_some());
        // No folder, no library.
        let empty = load(&root.path().join("elsewhere"), &Catalogue::builtin());
        assert!(empty.names.is_empty() && empty.invalid.is_empty());
    }

    #[test]
    fn a_bad_file_is_located_and_the_others_are_still_served() {
        let broken = PAYROLL.replace("collection: payslips}", "collection: payslips");
        let root = suite(&[
            ("payroll.yaml", PAYROLL),
            ("broken.yaml", &broken.replace("payroll", "broken")),
            ("todo.yaml", &PAYROLL.replace("payroll", "todo")),
            ("misnamed.yaml", PAYROLL),
        ]);
        let library = load(root.path(), &Catalogue::builtin());
        assert_eq!(library.names, ["payroll"]);
        let found: Vec<String> = library
            .invalid
            .iter()
            .map(|invalid| invalid.plain())
            .collect();
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(
            found[0].starts_with(
                "services/broken.yaml:10:13: (document): while parsing a flow mapping"
            ),
            "{found:#?}"
        );
        assert!(
            found[1].starts_with("services/misnamed.yaml:1:1: name: the service is named `payroll` in a file named `misnamed.yaml`"),
            "{found:#?}"
        );
        assert!(
            found[2].starts_with("services/todo.yaml:1:1: name: service `todo` is defined twice"),
            "{found:#?}"
        );
    }

    #[test]
    fn a_link_is_neither_read_nor_written_through() {
        let root = suite(&[]);
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("payroll.yaml");
        std::fs::write(&target, PAYROLL).unwrap();
        let link = root.path().join(FOLDER).join("payroll.yaml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let library = load(root.path(), &Catalogue::builtin());
        assert!(library.names.is_empty());
        assert_eq!(library.invalid.len(), 1);
        let description: ServiceDescription = serde_saphyr::from_str(PAYROLL).unwrap();
        assert!(write(root.path(), &description, "# provenance\n").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), PAYROLL);
    }
}
