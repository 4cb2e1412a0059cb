//! `[harness]`'s two forms, `[matrix]`, the cells and `--cell`.

use std::path::{Path, PathBuf};

use super::matrix::HARNESS_KEYS;
use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_text(text, Path::new("clawtest.toml"), PathBuf::from("/suite"))
}

fn located(text: &str) -> (String, Option<usize>) {
    match parse(text).unwrap_err() {
        ConfigError::Invalid(invalid) => (invalid.message.clone(), invalid.line),
        other => panic!("expected a located error, got {other:?}"),
    }
}

fn names(cells: &[CellSpec]) -> Vec<String> {
    cells.iter().map(CellSpec::name).collect()
}

const MATRIX: &str = "[harness.retrying]\ncommand = [\"./agent\"]\n[harness.bare]\ncommand = [\"./agent\", \"--no-retries\"]\nexclude_models = [\"weak\"]\n[matrix]\nmodels = [\"strong\", \"weak\"]\n";

#[test]
fn the_harness_keys_are_the_fields_of_a_harness() {
    // serde lists a struct's fields in its unknown-field error, in declaration order.
    let error = toml::from_str::<HarnessConfig>("bogus = 1").unwrap_err();
    let listed: Vec<&str> = error
        .message()
        .split("expected one of ")
        .nth(1)
        .unwrap()
        .split(", ")
        .map(|field| field.trim_matches('`'))
        .collect();
    assert_eq!(listed, HARNESS_KEYS);
}

#[test]
fn one_unnamed_harness_is_one_cell_and_no_matrix() {
    let config = parse("[harness]\ncommand = \"./agent\"\nmodel = \"gpt-4o\"\n").unwrap();
    assert!(!config.is_matrix());
    assert_eq!(names(&config.cells()), ["default/gpt-4o"]);
    assert_eq!(
        config.for_cell(&config.cells()[0]).harness.model.as_deref(),
        Some("gpt-4o")
    );
}

#[test]
fn named_harnesses_times_models_less_the_excluded_are_the_cells() {
    let config = parse(MATRIX).unwrap();
    assert!(config.is_matrix());
    assert_eq!(
        names(&config.cells()),
        ["bare/strong", "retrying/strong", "retrying/weak"]
    );
    let cell = config.for_cell(&config.cells()[0]);
    assert_eq!(
        cell.harness.command,
        Some(CommandLine::Words(vec![
            "./agent".into(),
            "--no-retries".into()
        ]))
    );
    assert_eq!(cell.harness.model.as_deref(), Some("strong"));
    assert!(!cell.is_matrix(), "a cell's configuration is one harness");
}

#[test]
fn the_unnamed_harness_with_models_is_a_matrix_of_one_harness() {
    let config =
        parse("[harness]\ncommand = \"./agent\"\n[matrix]\nmodels = [\"a\", \"b\"]\n").unwrap();
    assert_eq!(names(&config.cells()), ["default/a", "default/b"]);
}

#[test]
fn cells_are_selected_by_glob_and_a_glob_that_matches_none_lists_them() {
    let config = parse(MATRIX).unwrap();
    let chosen = config.select_cells(&["retrying/*".into()]).unwrap();
    assert_eq!(names(&chosen), ["retrying/strong", "retrying/weak"]);
    let chosen = config
        .select_cells(&["*/weak".into(), "bare/*".into()])
        .unwrap();
    assert_eq!(names(&chosen), ["bare/strong", "retrying/weak"]);
    let error = config
        .select_cells(&["nope/*".into()])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("matched no cell")
            && error.contains("bare/strong, retrying/strong, retrying/weak"),
        "{error}"
    );
}

#[test]
fn a_harness_key_beside_named_harnesses_is_refused_at_its_line() {
    let (message, line) =
        located("[harness]\ncommand = \"./agent\"\n[harness.other]\ncommand = \"./other\"\n");
    assert!(message.contains("give every harness a name"), "{message}");
    assert!(line.is_some());
    let (message, _) =
        located("[harness.other]\ncommand = \"./other\"\n[harness]\ntier = \"mcp\"\n");
    assert!(
        message.contains("`tier` is a key of one harness") && message.contains("[harness.other]"),
        "{message}"
    );
}

#[test]
fn a_misspelt_key_of_the_unnamed_harness_is_suggested_and_located() {
    let (message, line) = located("[harness]\ncommand = \"./agent\"\ntierr = \"mcp\"\n");
    assert!(message.contains("did you mean `tier`?"), "{message}");
    assert_eq!(line, Some(3));
    let (message, line) = located("[harness]\ncomand = \"./agent\"\n");
    assert!(
        message.contains("must be a table [harness.NAME]"),
        "{message}"
    );
    assert_eq!(line, Some(2));
}

#[test]
fn an_error_inside_a_named_harness_keeps_its_line() {
    let (message, line) =
        located("[harness.a]\ncommand = \"./agent\"\n\n[harness.b]\ntier = \"bogus\"\n");
    assert!(message.contains("bogus"), "{message}");
    assert_eq!(line, Some(5));
}

#[test]
fn the_matrix_is_checked() {
    for (text, field, words) in [
        (
            "[harness.a]\ncommand = \"x\"\nexclude_models = [\"c\"]\n[matrix]\nmodels = [\"a\", \"b\"]\n",
            "harness.a.exclude_models",
            "did you mean",
        ),
        (
            "[harness.a]\ncommand = \"x\"\nexclude_models = [\"a\"]\n[matrix]\nmodels = [\"a\"]\n",
            "harness.a.exclude_models",
            "excludes every model",
        ),
        (
            "[harness]\ncommand = \"x\"\nmodel = \"m\"\n[matrix]\nmodels = [\"a\"]\n",
            "harness.model",
            "remove the harness's `model`",
        ),
        (
            "[matrix]\nmodels = [\"a\", \"a\"]\n",
            "matrix.models",
            "twice",
        ),
        (
            "[matrix]\nmodels = [\"../a\"]\n",
            "matrix.models",
            "cannot name",
        ),
        (
            "[harness.\"a/b\"]\ncommand = \"x\"\n",
            "harness.a/b",
            "names its cassettes' folder",
        ),
        (
            "[harness.a]\nimage = \"i\"\ndockerfile = \"D\"\n",
            "harness.a.dockerfile",
            "not both",
        ),
    ] {
        match parse(text).unwrap_err() {
            ConfigError::Value {
                field: found,
                message,
                ..
            } => {
                assert_eq!(found, field, "{text}");
                assert!(message.contains(words), "{text}: {message}");
            }
            other => panic!("{text}: expected a value error, got {other:?}"),
        }
    }
}

fn value_error(text: &str) -> (String, String) {
    match parse(text).unwrap_err() {
        ConfigError::Value { field, message, .. } => (field, message),
        other => panic!("expected a value error, got {other:?}"),
    }
}

#[test]
fn gates_per_cell_and_on_a_change_are_read() {
    let config = parse(&format!(
        "{MATRIX}[gates.cells.\"retrying/*\"]\nmin_pass_hat_k = 1.0\nmin_recovery.rate_limited = 0.9\n[[gates.change]]\nfrom = \"retrying/strong\"\nto = \"retrying/weak\"\nmeasure = \"mean_score\"\ncapability = \"multi_step\"\nmin = -0.05\n"
    ))
    .unwrap();
    let (pattern, thresholds) = config.gates.cells.iter().next().unwrap();
    assert_eq!(pattern.as_str(), "retrying/*");
    assert_eq!(thresholds.min_pass_hat_k, Some(1.0));
    assert_eq!(config.gates.change[0].group(), "capability:multi_step");
    // Not set on the command line: the configuration's stay.
    let merged = Gates::default().or(&config.gates);
    assert_eq!(merged.change, config.gates.change);
}

#[test]
fn a_bad_glob_in_the_gates_is_refused_at_its_line() {
    let (message, line) = located(&format!(
        "{MATRIX}[gates.cells.\"retrying/[\"]\nmin_score = 0.5\n"
    ));
    assert!(
        message.contains("`retrying/[` is not a glob over harness/model"),
        "{message}"
    );
    assert_eq!(line, Some(8));
}

#[test]
fn the_gates_name_cells_of_the_suite() {
    let (field, message) = value_error(&format!(
        "{MATRIX}[gates.cells.\"slow/*\"]\nmin_score = 0.5\n"
    ));
    assert_eq!(field, "gates.cells.\"slow/*\"");
    assert_eq!(
        message,
        "matches no cell; the cells are bare/strong, retrying/strong, retrying/weak"
    );
    let (field, message) = value_error(&format!(
        "{MATRIX}[[gates.change]]\nfrom = \"retrying/strong\"\nto = \"retrying/waek\"\nmeasure = \"pass_hat_k\"\nmin = 0.0\n"
    ));
    assert_eq!(field, "gates.change[0].to");
    assert!(
        message.contains("`retrying/waek` is not a cell"),
        "{message}"
    );
    assert!(message.contains("retrying/weak"), "{message}");
    // bare does not run the weak model.
    let (field, _) = value_error(&format!(
        "{MATRIX}[[gates.change]]\nfrom = \"bare/strong\"\nto = \"bare/weak\"\nmeasure = \"pass_hat_k\"\nmin = 0.0\n"
    ));
    assert_eq!(field, "gates.change[0].to");
}

#[test]
fn change_gates_and_cell_thresholds_are_checked() {
    let change = |rest: &str| {
        value_error(&format!(
            "{MATRIX}[[gates.change]]\nfrom = \"retrying/strong\"\nto = \"retrying/weak\"\nmeasure = \"pass_hat_k\"\n{rest}"
        ))
    };
    let (field, message) = change("");
    assert_eq!(field, "gates.change[0]");
    assert!(message.starts_with("needs `min`"), "{message}");
    let (field, message) = change("min = 0.2\nmax = 0.1\n");
    assert_eq!(field, "gates.change[0].min");
    assert!(message.contains("no change could hold"), "{message}");
    let (field, _) = change("min = -2.0\n");
    assert_eq!(field, "gates.change[0].min");
    let (field, _) = change("category = \"a\"\ncapability = \"b\"\nmin = 0.0\n");
    assert_eq!(field, "gates.change[0].capability");
    let (field, message) = value_error(&format!(
        "{MATRIX}[gates.cells.\"*/weak\"]\nmin_recovery.slow = 0.5\n"
    ));
    assert_eq!(field, "gates.cells.\"*/weak\".min_recovery.slow");
    assert!(message.contains("nothing to recover from"), "{message}");
    let (field, _) = value_error(&format!(
        "{MATRIX}[gates.cells.\"*/weak\"]\nmin_score = 1.5\n"
    ));
    assert_eq!(field, "gates.cells.\"*/weak\".min_score");
}

#[test]
fn a_suite_of_one_harness_has_no_cell_gates() {
    let (field, message) =
        value_error("[harness]\ncommand = \"./agent\"\n[gates.cells.\"*\"]\nmin_score = 0.5\n");
    assert_eq!(field, "gates.cells");
    assert!(
        message.contains("put its thresholds in [gates]"),
        "{message}"
    );
}
