//! A run of a matrix: one run per cell ([`cell_runs`]: the cell's configuration, as
//! `Config::for_cell` gives it, and its request, whose cassettes and snapshots are the cell's),
//! run one after another by the caller, then [`combine`]d into one summary whose verdicts name
//! their cell, gated and compared with the baseline as a whole. Cells run in name order, and
//! the combination sorts by cell: the results do not depend on the order cells finish in.

use std::path::PathBuf;

use super::session::{Executed, Request, SessionError};
use crate::config::{Config, Gates};
use crate::results::matrix::Cell;
use crate::results::merge::MergeError;

/// One cell's run.
pub struct CellRun {
    /// The cell, with its harness's digest.
    pub cell: Cell,
    /// The configuration of that cell alone.
    pub config: Config,
    /// The request of that cell: its cassettes and snapshots folders, no gates or baseline
    /// (the matrix is gated and compared as a whole).
    pub request: Request,
}

/// The runs of the cells `patterns` select (`--cell`, globs over `harness/model`; all when
/// empty), in name order.
pub fn cell_runs(
    config: &Config,
    request: &Request,
    patterns: &[String],
) -> Result<Vec<CellRun>, SessionError> {
    let mut cells = config.select_cells(patterns)?;
    cells.sort();
    Ok(cells
        .into_iter()
        .map(|spec| {
            let mut config = config.for_cell(&spec);
            // The gates are the matrix's, held once over every cell's verdicts by `combine`:
            // a cell's own run holds none (a cell gate or a change gate means nothing there).
            config.gates = Gates::default();
            let cell = Cell {
                harness: spec.harness.clone(),
                model: spec.model.clone(),
                harness_digest: config.harness.digest(),
            };
            let request = Request {
                cell: Some(spec),
                gates: Gates::default(),
                baseline: None,
                ..request.clone()
            };
            CellRun {
                cell,
                config,
                request,
            }
        })
        .collect())
}

/// The cells' runs as one: every verdict named by its cell, the gates of `config` and the
/// request, and the request's baseline, over the whole; the warnings of every cell, each
/// line naming it.
pub fn combine(
    config: &Config,
    request: &Request,
    cells: Vec<(Cell, Executed)>,
) -> Result<Executed, MergeError> {
    let run: Vec<String> = cells.iter().map(|(cell, _)| cell.name()).collect();
    let mut parts = Vec::new();
    let mut warnings = Vec::new();
    let mut stale = None;
    for (cell, executed) in cells {
        let mut summary = executed.summary;
        for verdict in &mut summary.verdicts {
            verdict.cell = Some(cell.clone());
        }
        // A task's snapshot is the cell's (`snapshots/<harness>/<model>/<task>.snap`): named
        // by its cell too, or the same task's new snapshots in two cells would count once.
        let snapshots = &mut summary.snapshots;
        for name in snapshots.new.iter_mut().chain(snapshots.changed.iter_mut()) {
            *name = format!("{}/{name}", cell.name());
        }
        summary.cells = vec![cell.clone()];
        warnings.extend(
            executed
                .warnings
                .into_iter()
                .map(|warning| format!("{}: {warning}", cell.name())),
        );
        stale.get_or_insert(executed.stale);
        parts.push((PathBuf::from(cell.name()), summary));
    }
    // Gated on the cells run: a change gate towards a cell `--cell` left out is not held.
    let gates = request.gates.or(&config.gates).for_cells(&run);
    let gates = if request.partition.is_some() {
        Gates::default()
    } else {
        gates
    };
    let baseline = request
        .baseline
        .as_ref()
        .filter(|_| request.partition.is_none());
    let mut summary = crate::results::merge::combine(parts, &gates, baseline)?;
    summary.shard = request.partition.map(|partition| partition.shard());
    Ok(Executed {
        summary,
        warnings,
        // Each cell compared its own snapshots; their failures are in the summary.
        review: None,
        stale: stale.unwrap_or_default(),
    })
}
