//! What a swarm box is made of: its job's service spec, and the networks and egress proxy it
//! shares with the engine's other boxes, made once per engine (or per provider) and kept, so
//! a run makes one secret and one service and nothing else (README.md, "Where runs run").

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::{
    EndpointSpec, EndpointSpecModeEnum, Limit, Mount, MountTmpfsOptions, MountType,
    NetworkAttachmentConfig, NetworkCreateRequest, ServiceSpec, ServiceSpecMode,
    ServiceSpecModeReplicatedJob, TaskSpec, TaskSpecContainerSpec, TaskSpecContainerSpecSecrets,
    TaskSpecPlacement, TaskSpecResources, TaskSpecRestartPolicy,
    TaskSpecRestartPolicyConditionEnum,
};

use crate::egress::{EGRESS_ALIAS, EGRESS_PORT};
use crate::plan::{BOX_DIR, RemotePlan};

/// The label of what boxes share (value: what it is for); a run never removes it.
pub(crate) const LABEL_SHARED: &str = "codehands.shared";
/// The label naming the image an egress proxy runs.
pub(crate) const LABEL_IMAGE: &str = "codehands.image";
/// The network of the boxes that reach nothing: an internal overlay (no route out), made once
/// per engine. Not a bridge with `enable_icc=false`, which would keep boxes from each other
/// too: Docker 20.10 leaves a swarm-scoped bridge behind on the node when it is removed, and a
/// new one of the name then never starts a task.
pub(crate) const BOXES_NETWORK: &str = "codehands-boxes";

/// The network the box of `plan` joins, made when the engine lacks it: the boxes' one, or for
/// a box with a provider the internal overlay its provider's egress proxy serves.
pub(super) async fn ensure_network(docker: &Docker, plan: &RemotePlan) -> Result<String, String> {
    if plan.egress.forwards.is_empty() {
        let boxes = NetworkCreateRequest {
            name: BOXES_NETWORK.to_owned(),
            driver: Some("overlay".to_owned()),
            internal: Some(true),
            // Not attachable: only services join it, never a container started by hand.
            attachable: Some(false),
            labels: Some(shared_labels("boxes")),
            ..Default::default()
        };
        create_once(docker, boxes)
            .await
            .map_err(|e| format!("the swarm refused the boxes' network: {e}"))?;
        return Ok(BOXES_NETWORK.to_owned());
    }
    let name = egress_name(plan);
    for (network, internal) in [(name.clone(), true), (format!("{name}-out"), false)] {
        let overlay = NetworkCreateRequest {
            name: network,
            driver: Some("overlay".to_owned()),
            internal: Some(internal),
            attachable: Some(false),
            labels: Some(egress_labels(plan)),
            ..Default::default()
        };
        create_once(docker, overlay)
            .await
            .map_err(|e| format!("the swarm refused the egress network: {e}"))?;
    }
    ensure_egress(docker, plan, &name).await?;
    Ok(name)
}

/// Makes `request`'s network unless the engine has one of its name (made by another run: a
/// swarm refuses a second network of a name, 409, also when two runs race to make it).
async fn create_once(docker: &Docker, request: NetworkCreateRequest) -> Result<(), String> {
    super::create_network(docker, request)
        .await
        .map_err(|e| e.to_string())
}

fn shared_labels(what: &str) -> HashMap<String, String> {
    HashMap::from([(LABEL_SHARED.to_owned(), what.to_owned())])
}

/// The labels of a provider's egress proxy and its networks: shared, and the image they run
/// (what a test removes once its image is gone).
fn egress_labels(plan: &RemotePlan) -> HashMap<String, String> {
    let mut labels = shared_labels("egress");
    labels.insert(LABEL_IMAGE.to_owned(), plan.image.clone());
    labels
}

/// The name of the egress proxy (and of its networks) of `plan`'s provider: one per image,
/// allow list and placement, whichever run made it first.
pub(crate) fn egress_name(plan: &RemotePlan) -> String {
    // FNV-1a: a name every build of codehands computes the same.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |text: &str| {
        for byte in text.bytes().chain([0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(&plan.image);
    plan.egress
        .allow()
        .iter()
        .for_each(|t| feed(&t.to_string()));
    plan.constraints.iter().for_each(|c| feed(c));
    format!("codehands-egress-{hash:016x}")
}

fn constraints(plan: &RemotePlan) -> Vec<String> {
    let mut constraints = vec!["node.platform.os == linux".to_owned()];
    constraints.extend(plan.constraints.iter().cloned());
    constraints
}

/// The egress proxy `name`: a service of the box image on the provider's internal network (as
/// [`EGRESS_ALIAS`]) and on one with a way out; made unless it runs already.
async fn ensure_egress(docker: &Docker, plan: &RemotePlan, name: &str) -> Result<(), String> {
    if docker.inspect_service(name, None).await.is_ok() {
        return Ok(());
    }
    let image = pinned_image(docker, &plan.image).await;
    let mut command = vec![
        "codehands".to_owned(),
        crate::EGRESS_COMMAND.to_owned(),
        EGRESS_PORT.to_string(),
    ];
    command.extend(plan.egress.allow().iter().map(|t| t.to_string()));
    let spec = ServiceSpec {
        name: Some(name.to_owned()),
        labels: Some(egress_labels(plan)),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(image),
                labels: Some(egress_labels(plan)),
                command: Some(command),
                env: Some(plan.public_env()),
                user: Some("65534:65534".to_owned()),
                read_only: Some(true),
                init: Some(true),
                capability_drop: Some(vec!["ALL".to_owned()]),
                ..TaskSpecContainerSpec::default()
            }),
            resources: Some(TaskSpecResources {
                limits: Some(Limit {
                    nano_cpus: Some(500_000_000),
                    memory_bytes: Some(128 << 20),
                    pids: Some(512),
                }),
                ..TaskSpecResources::default()
            }),
            placement: Some(TaskSpecPlacement {
                constraints: Some(constraints(plan)),
                ..TaskSpecPlacement::default()
            }),
            networks: Some(vec![
                NetworkAttachmentConfig {
                    target: Some(name.to_owned()),
                    aliases: Some(vec![EGRESS_ALIAS.to_owned()]),
                    ..NetworkAttachmentConfig::default()
                },
                NetworkAttachmentConfig {
                    target: Some(format!("{name}-out")),
                    ..NetworkAttachmentConfig::default()
                },
            ]),
            ..TaskSpec::default()
        }),
        // The name resolves to the task's own address: a virtual IP on an internal overlay
        // network is not routed (tried on Docker 20.10).
        endpoint_spec: Some(EndpointSpec {
            mode: Some(EndpointSpecModeEnum::DNSRR),
            ..EndpointSpec::default()
        }),
        ..ServiceSpec::default()
    };
    match docker.create_service(spec, None).await {
        Ok(_)
        | Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409, ..
        }) => Ok(()),
        Err(e) => Err(format!("the swarm refused the egress proxy {name}: {e}")),
    }
}

/// The image of `plan` as a swarm's node takes it without asking a registry: a node pulls an
/// image named by tag before every task (and waits for a registry it may not reach: seconds
/// per task, tasks stuck in "Starting"), but not one named by digest that it has, nor by id.
/// Pushed to a registry: `name@digest` (a node that lacks it pulls exactly that). Loaded on
/// each node (`docker load`, no registry): its id, the same on every node it was loaded on.
/// Not on the manager: the name as given.
pub(super) async fn pinned_image(docker: &Docker, image: &str) -> String {
    if image.contains('@') || image.starts_with("sha256:") {
        return image.to_owned();
    }
    let Ok(inspected) = docker.inspect_image(image).await else {
        return image.to_owned();
    };
    let name = image.rsplit_once(':').filter(|(_, tag)| !tag.contains('/'));
    let name = name.map_or(image, |(name, _)| name);
    let digest = inspected
        .repo_digests
        .unwrap_or_default()
        .into_iter()
        .find(|d| {
            d.split_once('@')
                .is_some_and(|(repo, _)| repo == name || repo.ends_with(&format!("/{name}")))
        });
    digest.or(inspected.id).unwrap_or_else(|| image.to_owned())
}

/// The job's service: the box (its image `image`, pinned) on `network`, its inputs the
/// `secrets`, run once.
pub(super) fn job_spec(
    plan: &RemotePlan,
    image: &str,
    secrets: Vec<TaskSpecContainerSpecSecrets>,
    network: &str,
) -> ServiceSpec {
    let tmpfs = |target: &str, bytes: i64| Mount {
        target: Some(target.to_owned()),
        typ: Some(MountType::TMPFS),
        tmpfs_options: Some(MountTmpfsOptions {
            size_bytes: Some(bytes),
            ..MountTmpfsOptions::default()
        }),
        ..Mount::default()
    };
    let worktree = plan.worktree.display().to_string();
    let limits = plan.limits;
    ServiceSpec {
        name: Some(plan.name()),
        labels: Some(plan.labels()),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(image.to_owned()),
                labels: Some(plan.labels()),
                command: Some(plan.command(true)),
                env: Some(plan.public_env()),
                dir: Some(worktree.clone()),
                read_only: Some(true),
                init: Some(true),
                capability_drop: Some(vec!["ALL".to_owned()]),
                mounts: Some(vec![
                    tmpfs(BOX_DIR, 256 << 20),
                    tmpfs(&worktree, limits.memory_bytes / 2),
                    tmpfs("/tmp", 512 << 20),
                ]),
                secrets: Some(secrets),
                hosts: Some(
                    plan.egress
                        .hosts
                        .iter()
                        .map(|(name, ip)| format!("{ip} {name}"))
                        .collect(),
                ),
                ..TaskSpecContainerSpec::default()
            }),
            resources: Some(TaskSpecResources {
                limits: Some(Limit {
                    nano_cpus: Some(limits.nano_cpus),
                    memory_bytes: Some(limits.memory_bytes),
                    pids: Some(limits.pids),
                }),
                // No reservation: Docker 20.10's constraint enforcer counts the reservations
                // of a job's ended tasks, which stay on the node long after their service is
                // gone; once they add up to the node's CPUs (80 runs at a fortieth), it turns
                // every new job down ("assigned node no longer meets constraints": seen here,
                // 224 ended tasks on the node). The limits stay.
                reservations: None,
                ..TaskSpecResources::default()
            }),
            // A run is never run twice: a task that fails is the run's failure.
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::NONE),
                ..TaskSpecRestartPolicy::default()
            }),
            placement: Some(TaskSpecPlacement {
                constraints: Some(constraints(plan)),
                ..TaskSpecPlacement::default()
            }),
            networks: Some(vec![NetworkAttachmentConfig {
                target: Some(network.to_owned()),
                ..NetworkAttachmentConfig::default()
            }]),
            ..TaskSpec::default()
        }),
        mode: Some(ServiceSpecMode {
            replicated_job: Some(ServiceSpecModeReplicatedJob {
                max_concurrent: Some(1),
                total_completions: Some(1),
            }),
            ..ServiceSpecMode::default()
        }),
        ..ServiceSpec::default()
    }
}

/// Removes what boxes share (networks, egress proxies), for a bench or test that is done with
/// the engine; a network some box still uses stays.
pub async fn remove_shared(docker: &Docker) {
    let filters = HashMap::from([("label".to_owned(), vec![LABEL_SHARED.to_owned()])]);
    let services = bollard::query_parameters::ListServicesOptionsBuilder::default()
        .filters(&filters)
        .build();
    for service in docker
        .list_services(Some(services))
        .await
        .unwrap_or_default()
    {
        if let Some(id) = service.id {
            let _ = docker.delete_service(&id).await;
        }
    }
    let networks = bollard::query_parameters::ListNetworksOptionsBuilder::default()
        .filters(&filters)
        .build();
    for _ in 0..20 {
        let left = docker
            .list_networks(Some(networks.clone()))
            .await
            .unwrap_or_default();
        if left.is_empty() {
            return;
        }
        for network in left {
            if let Some(id) = network.id {
                let _ = docker.remove_network(&id).await;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
