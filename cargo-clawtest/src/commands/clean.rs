//! `cargo clawtest clean`: removes what earlier runs left behind: their scratch folders in the
//! system's temporary folder and in `/dev/shm` (only those marked as clawtest's whose run has
//! ended), then the docker-sandbox containers.

use super::{Outcome, runtime};
use crate::errors::ExpectedError;

pub fn run() -> Outcome {
    let folders: usize = clawtest::sandbox::scratch::parents()
        .iter()
        .map(|parent| {
            clawtest::sandbox::scratch::clean(parent)
                .unwrap_or_default()
                .len()
        })
        .sum();
    sayln!("removed {folders} clawtest temporary folder(s)");
    let removed = runtime()?.block_on(async {
        let engine = clawtest::sandbox::docker::connect().await?;
        clawtest::sandbox::docker::clean(&engine).await
    });
    let count = removed.map_err(ExpectedError::Docker)?;
    sayln!("removed {count} clawtest container(s)");
    Ok(())
}
