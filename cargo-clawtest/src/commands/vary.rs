//! `cargo clawtest vary TASK_OR_FOLDER… [--count N]`: N variants of each task, without a
//! model, each through the accept pipeline (valid, new, proven feasible), written to `--out`;
//! a variant that fails is reported and not written. `generate --variants N --from …` still
//! comes here, after a notice (`cli::deprecated_alias`).

use clawtest::config::Config;
use clawtest::services::Catalogue;
use clawtest::variants::{self, Options};

use clawtest::sandbox::commands::{CommandRule, Origin};

use super::{Outcome, command_place, working_directory};
use crate::cli::{GlobalArgs, VaryArgs};
use crate::errors::ExpectedError;

pub fn run(global: &GlobalArgs, arguments: &VaryArgs) -> Outcome {
    let paths: Vec<std::path::PathBuf> = arguments
        .paths
        .iter()
        .chain(&arguments.from)
        .cloned()
        .collect();
    if paths.is_empty() {
        return Err(ExpectedError::Usage(
            "`vary` needs the tasks to make variants of: `cargo clawtest vary TASK_OR_FOLDER…`",
        ));
    }
    let count = arguments.count;
    let out = arguments.out.clone();
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
    let place = command_place(&config, arguments.backend)?;
    let commands =
        CommandRule::new(place, arguments.allow_host_commands).for_origin(Origin::Variant);
    let sources = variants::from_paths(&paths, &catalogue, &options, &commands)
        .map_err(ExpectedError::Validate)?;
    if sources.is_empty() {
        return Err(ExpectedError::NoTaskFiles);
    }
    let (mut written, mut failed, mut skipped) = (0, 0, 0);
    for source in sources {
        let (task, generated) = match source.outcome {
            Ok(outcome) => outcome,
            Err(invalid) => {
                errln!(
                    "error: {} is not a valid task:\n{}",
                    source.source.display(),
                    invalid.plain()
                );
                failed += 1;
                continue;
            }
        };
        if let Some(reason) = &generated.skipped {
            sayln!("skipped {}: {reason}", source.source.display());
            skipped += 1;
        }
        for note in &generated.left_alone {
            sayln!("{}: left alone: {note}", task.id);
        }
        for variant in &generated.variants {
            let path = variants::write(variant, &out).map_err(ExpectedError::Variants)?;
            sayln!("wrote {} ({})", path.display(), variant.applied.join("; "));
            written += 1;
        }
        for failure in &generated.failures {
            errln!(
                "error: variant `{}` not written: {}",
                failure.id,
                failure.reason
            );
            failed += 1;
        }
    }
    sayln!(
        "{written} variant(s) written to {}; {failed} failed; {skipped} task(s) skipped",
        out.display()
    );
    if failed > 0 {
        Err(ExpectedError::Reported)
    } else {
        Ok(())
    }
}
