//! `cargo clawtest generate --request "…"`: tasks from a sentence (the library's
//! `generate`), with a line for each task written, retried or dropped and a summary; and
//! `cargo clawtest generate --variants N --from TASK_OR_FOLDER`: N variants of each task,
//! each validated and proven feasible, written to `--out`; a variant that fails is reported
//! and not written.

use clawtest::config::Config;
use clawtest::services::Catalogue;
use clawtest::variants::{self, Options};

use super::{Outcome, working_directory};
use crate::cli::{GenerateArgs, GlobalArgs};
use crate::errors::ExpectedError;

pub fn run(global: &GlobalArgs, arguments: &GenerateArgs) -> Outcome {
    if arguments.variants.is_none() && arguments.from.is_empty() {
        return super::generate_request::run(global, arguments);
    }
    let Some(count) = arguments.variants else {
        return Err(ExpectedError::Usage(
            "`--from` needs `--variants N`: it writes N variants of each task under --from",
        ));
    };
    if arguments.from.is_empty() {
        return Err(ExpectedError::Usage(
            "`--variants N` needs `--from TASK_OR_FOLDER`: the tasks to make variants of",
        ));
    }
    let out = arguments
        .out
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("variants"));
    let kinds = arguments.kinds();
    if kinds.is_empty() {
        return Err(ExpectedError::Usage(
            "every kind of perturbation is switched off: drop a --no-KIND flag or widen --only",
        ));
    }
    // The configuration only lends its pass threshold; without one, the default applies.
    let start = working_directory();
    let config = Config::optional(global.config.as_deref(), &start)
        .map(|config| config.unwrap_or_else(|| Config::defaults(start.clone())))
        .map_err(ExpectedError::Config)?;
    let options = Options {
        count,
        seed: arguments.seed.unwrap_or(variants::DEFAULT_SEED),
        kinds,
        threshold: config.run.pass_threshold,
    };
    let catalogue = Catalogue::builtin();
    let sources = variants::from_paths(&arguments.from, &catalogue, &options)
        .map_err(ExpectedError::Validate)?;
    if sources.is_empty() {
        return Err(ExpectedError::NoTaskFiles);
    }
    let (mut written, mut failed, mut skipped) = (0, 0, 0);
    for source in sources {
        let (task, generated) = match source.outcome {
            Ok(outcome) => outcome,
            Err(invalid) => {
                eprintln!(
                    "error: {} is not a valid task:\n{}",
                    source.source.display(),
                    invalid.plain()
                );
                failed += 1;
                continue;
            }
        };
        if let Some(reason) = &generated.skipped {
            outln!("skipped {}: {reason}", source.source.display());
            skipped += 1;
        }
        for note in &generated.left_alone {
            outln!("{}: left alone: {note}", task.id);
        }
        for variant in &generated.variants {
            let path = variants::write(variant, &out).map_err(ExpectedError::Variants)?;
            outln!("wrote {} ({})", path.display(), variant.applied.join("; "));
            written += 1;
        }
        for failure in &generated.failures {
            eprintln!(
                "error: variant `{}` not written: {}",
                failure.id, failure.reason
            );
            failed += 1;
        }
    }
    outln!(
        "{written} variant(s) written to {}; {failed} failed; {skipped} task(s) skipped",
        out.display()
    );
    if failed > 0 {
        Err(ExpectedError::Reported)
    } else {
        Ok(())
    }
}
