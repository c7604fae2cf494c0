//! Finding and removing boxes a crashed run left behind, by their labels.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::ListContainersOptionsBuilder;
use runner_contract::SessionId;

use crate::flags::SESSION_LABEL;
use crate::run::{engine_message, ensure_gone};

/// Removes every codehands box of `session` (every session's when `None`),
/// running or not; returns the names removed.
pub(crate) async fn remove_leftovers(
    docker: &Docker,
    session: Option<&SessionId>,
) -> Result<Vec<String>, String> {
    let label = match session {
        Some(id) => format!("{SESSION_LABEL}={id}"),
        None => SESSION_LABEL.to_owned(),
    };
    let filters = HashMap::from([("label", vec![label.as_str()])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let boxes = docker.list_containers(Some(options)).await.map_err(|e| {
        format!(
            "cannot list the engine's containers: {}",
            engine_message(&e)
        )
    })?;
    let mut removed = Vec::new();
    let mut failures = Vec::new();
    for summary in boxes {
        let Some(name) = summary.names.into_iter().flatten().next() else {
            continue;
        };
        let name = name.trim_start_matches('/').to_owned();
        match ensure_gone(docker, &name).await {
            Ok(()) => removed.push(name),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        Ok(removed)
    } else {
        Err(failures.join("; "))
    }
}
