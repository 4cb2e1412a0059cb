//! Removing containers: those of one run (its abort) and, for `cargo clawtest clean`, those
//! earlier runs left behind. A container's [`super::OWNER_LABEL`] names the host and the
//! process that created it, so clean leaves the containers of runs still in progress alone.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::ContainerSummary;
use bollard::query_parameters::ListContainersOptionsBuilder;

use super::container::remove_container;
use super::{DockerError, OWNER_LABEL, RUN_LABEL};
use crate::sandbox::owner::owner_alive;

/// Removes every container carrying `label` (`name` or `name=value`); returns how many.
pub(crate) async fn remove_labelled(docker: &Docker, label: &str) -> Result<usize, DockerError> {
    let containers = containers_labelled(docker, label).await?;
    for id in &containers {
        remove_container(docker, id).await;
    }
    Ok(containers.len())
}

/// `cargo clawtest clean`: removes the containers earlier runs left behind, keeping those of
/// runs still in progress on this host.
pub async fn clean(docker: &Docker) -> Result<usize, DockerError> {
    let mut removed = 0;
    for container in list_labelled(docker, RUN_LABEL).await? {
        let owner = container
            .labels
            .as_ref()
            .and_then(|labels| labels.get(OWNER_LABEL));
        if owner.is_some_and(|owner| owner_alive(owner)) {
            continue;
        }
        if let Some(id) = container.id {
            remove_container(docker, &id).await;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The ids of containers carrying `label` (`name` or `name=value`), running or not.
pub async fn containers_labelled(docker: &Docker, label: &str) -> Result<Vec<String>, DockerError> {
    Ok(list_labelled(docker, label)
        .await?
        .into_iter()
        .filter_map(|container| container.id)
        .collect())
}

/// Every container carrying `label` (`name` or `name=value`), running or not, as the engine
/// lists them.
async fn list_labelled(docker: &Docker, label: &str) -> Result<Vec<ContainerSummary>, DockerError> {
    let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    docker
        .list_containers(Some(options))
        .await
        .map_err(|error| DockerError::Engine(format!("listing containers: {error}")))
}
