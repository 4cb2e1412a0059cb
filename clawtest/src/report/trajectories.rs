//! Saving every trial's trajectory as it finishes (`--trajectories DIR`), so that a run can be
//! inspected and re-graded (`cargo clawtest grade`) without running the agent again.

use std::path::PathBuf;

use super::events::{Event, Reporter, TrialOutcome};

/// Writes `DIR/<task_id>/trial-<n>.json` for each finished trial that has a trajectory.
pub struct TrajectoryWriter {
    folder: PathBuf,
    /// Files that could not be written, with why (reported once the run ends).
    pub failures: Vec<String>,
}

impl TrajectoryWriter {
    /// A writer into `folder` (`--trajectories DIR`), created as trials finish.
    pub fn new(folder: PathBuf) -> TrajectoryWriter {
        TrajectoryWriter {
            folder,
            failures: Vec::new(),
        }
    }
}

impl Reporter for TrajectoryWriter {
    fn report(&mut self, event: &Event) {
        let Event::TrialFinished { outcome, .. } = event else {
            return;
        };
        let trajectory = match outcome {
            TrialOutcome::Graded { trajectory, .. } => trajectory,
            TrialOutcome::Error {
                trajectory: Some(trajectory),
                ..
            } => trajectory,
            _ => return,
        };
        let path = trajectory.file_in(&self.folder);
        let written = crate::persist::write(
            &path,
            trajectory.to_file_text().as_bytes(),
            crate::persist::Durability::Report,
        );
        if let Err(error) = written {
            self.failures.push(format!("{}: {error}", path.display()));
        }
    }
}
