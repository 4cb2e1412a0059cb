//! `cargo clawtest clean`: removes docker-sandbox containers that earlier runs left behind.

use super::{Outcome, runtime};
use crate::errors::ExpectedError;

pub fn run() -> Outcome {
    let removed = runtime()?.block_on(async {
        let engine = clawtest::sandbox::docker::connect().await?;
        clawtest::sandbox::docker::clean(&engine).await
    });
    let count = removed.map_err(ExpectedError::Docker)?;
    outln!("removed {count} clawtest container(s)");
    Ok(())
}
