//! The checks across values that the file format alone cannot express: ranges (trials,
//! thresholds, gates, docker limits, prices), choices that exclude each other (`image` and
//! `dockerfile`), and what one key requires of another (a judge provider needs a model); the
//! `[generate]` count and name; `[faults]`.

use super::ConfigError;
use super::raw::RawConfig;

/// A value's error: its field and what is wrong with it.
type ValueError<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

/// The first value of `raw` that cannot be used, as an error naming its field in `origin`.
pub(super) fn check(raw: &RawConfig, origin: &str) -> Result<(), ConfigError> {
    let value_error = |field: &str, message: String| ConfigError::Value {
        origin: origin.to_string(),
        field: field.into(),
        message,
    };
    check_run(raw, &value_error)?;
    check_faults(&raw.faults).map_err(|(field, message)| value_error(field, message))?;
    check_sandbox(raw, &value_error)?;
    super::matrix::check(&raw.harness, &raw.matrix, &value_error)?;
    check_llm(raw, &value_error)?;
    if raw.judge.provider.is_some() && raw.judge.model.as_deref().is_none_or(str::is_empty) {
        return Err(value_error(
            "judge.model",
            "a judge provider needs the model to ask, e.g. `model = \"gpt-4o-mini\"`".into(),
        ));
    }
    if raw.tasks.is_empty() {
        return Err(value_error(
            "tasks",
            "needs at least one glob, e.g. \"tasks/**/*.yaml\"".into(),
        ));
    }
    for pattern in &raw.tasks {
        if let Err(error) = globset::Glob::new(pattern) {
            return Err(value_error(
                "tasks",
                format!("`{pattern}` is not a valid glob: {error}"),
            ));
        }
    }
    let generate = &raw.generate;
    if !(1..=200).contains(&generate.count) {
        return Err(value_error(
            "generate.count",
            format!("must be between 1 and 200, found {}", generate.count),
        ));
    }
    if let Some(name) = &generate.name
        && !super::GenerateConfig::is_name(name)
    {
        return Err(value_error(
            "generate.name",
            format!("must be letters, digits, `_` and `-` (at most 60), found `{name}`"),
        ));
    }
    Ok(())
}

/// `[run]` and `[gates]`: trials in their range, thresholds that are fractions, recovery gated
/// only for faults there is something to recover from.
fn check_run(raw: &RawConfig, value_error: &ValueError<'_>) -> Result<(), ConfigError> {
    if !(1..=super::MAX_TRIALS).contains(&raw.run.trials) {
        return Err(value_error(
            "run.trials",
            format!(
                "must be from 1 to {}, found {}",
                super::MAX_TRIALS,
                raw.run.trials
            ),
        ));
    }
    if !(0.0..=1.0).contains(&raw.run.pass_threshold) {
        return Err(value_error(
            "run.pass_threshold",
            format!("must be between 0 and 1, found {}", raw.run.pass_threshold),
        ));
    }
    if let Some(value) = raw.gates.baseline_tolerance
        && !(0.0..=1.0).contains(&value)
    {
        return Err(value_error(
            "gates.baseline_tolerance",
            format!("must be between 0 and 1, found {value}"),
        ));
    }
    super::cell_gates::check_thresholds(&raw.gates.thresholds())
        .map_err(|(key, message)| value_error(&format!("gates.{key}"), message))?;
    Ok(())
}

/// The smallest `[limits] workspace_disk_bytes` accepted.
const MIN_WORKSPACE_DISK_BYTES: u64 = 1 << 20;

/// `[harness]`, `[docker]` and the workspace's disk cap: one image source, limits a container
/// (or a trial folder) can start with.
fn check_sandbox(raw: &RawConfig, value_error: &ValueError<'_>) -> Result<(), ConfigError> {
    for (field, harness) in raw.harness.by_field() {
        if harness.image.is_some() && harness.dockerfile.is_some() {
            return Err(value_error(
                &format!("{field}.dockerfile"),
                format!("give either {field}.image or {field}.dockerfile, not both"),
            ));
        }
    }
    if raw.docker.memory_mb < 16 {
        return Err(value_error(
            "docker.memory_mb",
            format!("must be at least 16, found {}", raw.docker.memory_mb),
        ));
    }
    if !(raw.docker.cpus > 0.0 && raw.docker.cpus <= 1024.0) {
        return Err(value_error(
            "docker.cpus",
            format!("must be above 0, found {}", raw.docker.cpus),
        ));
    }
    if raw.docker.pids < 8 {
        return Err(value_error(
            "docker.pids",
            format!("must be at least 8, found {}", raw.docker.pids),
        ));
    }
    // Below a mebibyte the prompt and tool files alone could pass it.
    if raw.limits.workspace_disk_bytes < MIN_WORKSPACE_DISK_BYTES {
        return Err(value_error(
            "limits.workspace_disk_bytes",
            format!(
                "must be at least {MIN_WORKSPACE_DISK_BYTES} (1 MiB), found {}",
                raw.limits.workspace_disk_bytes
            ),
        ));
    }
    Ok(())
}

/// `[llm]`: the cost limit, prices, replay rules and size limits.
fn check_llm(raw: &RawConfig, value_error: &ValueError<'_>) -> Result<(), ConfigError> {
    if let Some(limit) = raw.llm.max_cost_usd
        && !(limit.is_finite() && limit > 0.0)
    {
        return Err(value_error(
            "llm.max_cost_usd",
            format!("must be a positive number of US dollars, found {limit}"),
        ));
    }
    for (model, price) in &raw.llm.prices {
        if !(price.input_per_million >= 0.0 && price.output_per_million >= 0.0) {
            return Err(value_error(
                &format!("llm.prices.\"{model}\""),
                "prices must be zero or more US dollars per million tokens".into(),
            ));
        }
    }
    for (index, redaction) in raw.llm.replay.redactions.iter().enumerate() {
        if let Err(error) = regex::Regex::new(&redaction.pattern) {
            return Err(value_error(
                &format!("llm.replay.redactions[{index}].pattern"),
                format!(
                    "`{}` is not a regular expression: {error}",
                    redaction.pattern
                ),
            ));
        }
    }
    for field in &raw.llm.replay.ignore_fields {
        if field.split('.').any(str::is_empty) {
            return Err(value_error(
                "llm.replay.ignore_fields",
                format!(
                    "`{field}` is not a dotted field path, e.g. \"metadata.session_id\" or \"messages.*.id\""
                ),
            ));
        }
    }
    for (field, limit) in [
        ("llm.max_request_bytes", raw.llm.max_request_bytes),
        ("llm.max_answer_bytes", raw.llm.max_answer_bytes),
    ] {
        if limit < 1024 {
            return Err(value_error(
                field,
                format!("must be at least 1024 bytes, found {limit}"),
            ));
        }
    }
    Ok(())
}

/// The slowest answer `[faults] slow_ms` may ask for: a minute (a trial's own time limit is
/// what should end a hung agent, not a fault).
const MAX_SLOW_MS: u64 = 60_000;

/// `[faults]`: a rate that is a probability, weights that are shares, a delay range in order.
fn check_faults(faults: &crate::fault::FaultSettings) -> Result<(), (&'static str, String)> {
    if !(0.0..=1.0).contains(&faults.rate) {
        let hint = if (1.0..=100.0).contains(&faults.rate) {
            format!(" (a percentage? write `rate = {}`)", faults.rate / 100.0)
        } else {
            String::new()
        };
        return Err((
            "faults.rate",
            format!(
                "must be a probability between 0 and 1, found {}{hint}",
                faults.rate
            ),
        ));
    }
    for (kind, weight) in faults.mix.weights() {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err((
                "faults.mix",
                format!("`{kind}` must be a weight of 0 or more, found {weight}"),
            ));
        }
    }
    if faults.rate > 0.0
        && faults
            .mix
            .weights()
            .iter()
            .all(|(_, weight)| *weight == 0.0)
    {
        return Err((
            "faults.mix",
            "gives every kind weight 0: give one a weight, or set `rate = 0` to turn faults off"
                .into(),
        ));
    }
    let [low, high] = faults.slow_ms;
    if low > high || high > MAX_SLOW_MS {
        return Err((
            "faults.slow_ms",
            format!(
                "must be [shortest, longest] in milliseconds, at most {MAX_SLOW_MS}, found [{low}, {high}]"
            ),
        ));
    }
    Ok(())
}
