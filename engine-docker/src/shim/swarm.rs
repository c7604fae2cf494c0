//! The box as a Docker Swarm `replicated-job` service: the inputs travel as Swarm secrets, the
//! output and the result come back through the service's log (the manager relays it from
//! whichever node ran the task, which the caller may not reach).

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{
    EndpointSpec, EndpointSpecModeEnum, Limit, Mount, MountTmpfsOptions, MountType,
    NetworkAttachmentConfig, ResourceObject, SecretSpec, ServiceSpec, ServiceSpecMode,
    ServiceSpecModeReplicatedJob, TaskSpec, TaskSpecContainerSpec, TaskSpecContainerSpecFile,
    TaskSpecContainerSpecSecrets, TaskSpecPlacement, TaskSpecResources, TaskSpecRestartPolicy,
    TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    ListSecretsOptionsBuilder, ListTasksOptionsBuilder, LogsOptionsBuilder,
};
use futures::StreamExt;

use super::Output;
use crate::egress::{EGRESS_ALIAS, EGRESS_PORT};
use crate::frame::{ResultCollector, SECRET_CHUNK};
use crate::init::SECRET_PREFIX;
use crate::plan::{BOX_DIR, LABEL_BOX, RemotePlan};

/// How often the task's state is asked for.
const POLL: Duration = Duration::from_millis(300);

/// Runs the job of `plan` to its end (or adopts it when the service exists already) and
/// applies its result; the exit code is the agent's.
pub(super) async fn run(
    docker: &Docker,
    plan: &RemotePlan,
    env: &[(String, String)],
    stdin: &[u8],
    output: &mut Output,
    stops: &mut super::Stops,
) -> Result<i32, String> {
    let name = plan.name();
    let inputs = super::inputs(plan, env, stdin)?;
    if docker.inspect_service(&name, None).await.is_err() {
        create(docker, plan, &inputs).await?;
    }
    let (mut out, mut err) = (0u64, 0u64);
    let mut attempt = 0u64;
    let code = loop {
        let ended = tokio::select! {
            () = stops.recv() => None,
            ended = follow(docker, &name, output, &mut out, &mut err) => Some(ended),
        };
        match ended {
            None => {
                output.finish(true);
                remove(docker, plan).await;
                return Ok(143);
            }
            Some(End::Exited(code)) => break code,
            // The node turned the task down before it started (the scheduler placed more
            // tasks than their reservations fit, a known race of the swarm's): the agent never
            // ran, so the job is made again, after a pause that grows.
            Some(End::Rejected(why)) if attempt < 30 => {
                attempt += 1;
                remove(docker, plan).await;
                tokio::time::sleep(Duration::from_millis(200 * attempt.min(10))).await;
                create(docker, plan, &inputs)
                    .await
                    .map_err(|e| format!("{e} (after the swarm turned the job down: {why})"))?;
            }
            Some(End::Rejected(why) | End::Failed(why)) => {
                remove(docker, plan).await;
                return Err(why);
            }
        }
    };
    // The log from its start once more, now that the task has ended: a follow may end
    // before the last lines arrive. What was passed on already is skipped.
    output.replay(out, err);
    read_log(docker, &name, output, false, &mut 0, &mut 0).await;
    let mut collectors = output.take_collectors().into_iter();
    let collector = collectors.next().ok_or("no result collector")?;
    // A box whose agent's home was over its limits sent none: the next turn starts afresh.
    if let Some(home) = collectors.next().and_then(|c| c.finish().ok()) {
        plan.keep_home(&home);
    }
    remove(docker, plan).await;
    let applied = collector
        .finish()
        .and_then(|tar| super::apply_result(plan, &tar, None));
    output.finish(applied.is_ok());
    applied.map_err(|e| format!("the box's result was refused: {e}"))?;
    Ok(code)
}

/// What the shim takes out of the box's log: the result, then the agent's home.
pub(super) fn collectors(plan: &RemotePlan) -> Vec<ResultCollector> {
    vec![
        ResultCollector::new(&plan.nonce, super::RESULT_CAP as usize),
        ResultCollector::new(
            &crate::frame::home_nonce(&plan.nonce),
            crate::frame::HOME_CAP,
        ),
    ]
}

/// How a job's task ended.
enum End {
    /// The agent ran and exited with this code.
    Exited(i32),
    /// A node turned the task down before it ran: the job may be made again.
    Rejected(String),
    /// The swarm could not run it, or lost it.
    Failed(String),
}

/// The log as it comes while the task runs; how the task ended.
async fn follow(
    docker: &Docker,
    name: &str,
    output: &mut Output,
    out: &mut u64,
    err: &mut u64,
) -> End {
    let mut reading = Box::pin(read_log(docker, name, output, true, out, err));
    let mut done = false;
    loop {
        tokio::select! {
            () = &mut reading, if !done => done = true,
            () = tokio::time::sleep(POLL) => {
                if let Some(end) = task_end(docker, name).await {
                    return end;
                }
            }
        }
    }
}

/// Passes the service's log on from its first line; with `follow`, until the engine ends
/// the stream. Adds the bytes passed on to `out` and `err`.
async fn read_log(
    docker: &Docker,
    name: &str,
    output: &mut Output,
    follow: bool,
    out: &mut u64,
    err: &mut u64,
) {
    let options = LogsOptionsBuilder::default()
        .follow(follow)
        .stdout(true)
        .stderr(true)
        .build();
    let mut logs = docker.service_logs(name, Some(options));
    while let Some(Ok(chunk)) = logs.next().await {
        match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                *out += output.stdout(&message)
            }
            LogOutput::StdErr { message } => *err += output.stderr(&message),
            LogOutput::StdIn { .. } => {}
        }
    }
}

/// How the service's task ended, once it has.
async fn task_end(docker: &Docker, name: &str) -> Option<End> {
    let filters = HashMap::from([("service".to_owned(), vec![name.to_owned()])]);
    let options = ListTasksOptionsBuilder::default().filters(&filters).build();
    let tasks = match docker.list_tasks(Some(options)).await {
        Ok(tasks) => tasks,
        Err(e) => return Some(End::Failed(format!("the swarm lost the job {name}: {e}"))),
    };
    for task in tasks {
        let status = task.status.unwrap_or_default();
        let code = status.container_status.as_ref().and_then(|c| c.exit_code);
        let why = || {
            format!(
                "the swarm could not run the job {name}: {} (is the image on every node that may \
                 take it? see README.md, \"Where runs run\")",
                status
                    .err
                    .clone()
                    .or(status.message.clone())
                    .unwrap_or_default()
            )
        };
        match status.state {
            Some(TaskState::FAILED) if code.is_some() => {
                return code.map(|c| End::Exited(c as i32));
            }
            // A completed task is one whose container exited 0, whether or not the engine
            // still reports the code.
            Some(TaskState::COMPLETE) => return Some(End::Exited(code.unwrap_or(0) as i32)),
            Some(TaskState::REJECTED) => return Some(End::Rejected(why())),
            Some(TaskState::FAILED) | Some(TaskState::ORPHANED) => return Some(End::Failed(why())),
            _ => {}
        }
    }
    None
}

async fn create(docker: &Docker, plan: &RemotePlan, inputs: &[u8]) -> Result<(), String> {
    let name = plan.name();
    let mut secrets = Vec::new();
    for (i, chunk) in inputs.chunks(SECRET_CHUNK).enumerate() {
        let secret_name = format!("{name}-in-{i:03}");
        let spec = SecretSpec {
            name: Some(secret_name.clone()),
            labels: Some(plan.labels()),
            data: Some(base64::engine::general_purpose::STANDARD.encode(chunk)),
            ..SecretSpec::default()
        };
        let created = docker.create_secret(spec).await.map_err(|e| {
            format!("the swarm refused the box's inputs: {e} (is DOCKER_HOST a swarm manager? `docker swarm init`)")
        });
        let id = match created {
            Ok(id) => id.id,
            Err(e) => {
                remove(docker, plan).await;
                return Err(e);
            }
        };
        secrets.push(TaskSpecContainerSpecSecrets {
            file: Some(TaskSpecContainerSpecFile {
                name: Some(format!("{SECRET_PREFIX}{i:03}")),
                uid: Some("0".to_owned()),
                gid: Some("0".to_owned()),
                mode: Some(0o400),
            }),
            secret_id: Some(id),
            secret_name: Some(secret_name),
        });
    }
    // An overlay network of the box's own, internal (no route out) and not attachable: the
    // swarm has no `none` for services, and the box must reach nothing but its egress proxy
    // (README.md, "Where runs run").
    let network = bollard::models::NetworkCreateRequest {
        name: name.clone(),
        driver: Some("overlay".to_owned()),
        internal: Some(true),
        attachable: Some(false),
        labels: Some(plan.labels()),
        ..Default::default()
    };
    if let Err(e) = super::create_network(docker, network).await {
        remove(docker, plan).await;
        return Err(format!("the swarm refused the box's network: {e}"));
    }
    if let Err(e) = create_egress(docker, plan).await {
        remove(docker, plan).await;
        return Err(e);
    }
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
    let mut constraints = vec!["node.platform.os == linux".to_owned()];
    constraints.extend(plan.constraints.iter().cloned());
    let spec = ServiceSpec {
        name: Some(name.clone()),
        labels: Some(plan.labels()),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(plan.image.clone()),
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
                reservations: Some(ResourceObject {
                    nano_cpus: Some(limits.reserve_nano_cpus),
                    memory_bytes: Some(limits.reserve_memory_bytes),
                    ..ResourceObject::default()
                }),
                ..TaskSpecResources::default()
            }),
            // A run is never run twice: a task that fails is the run's failure.
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::NONE),
                ..TaskSpecRestartPolicy::default()
            }),
            placement: Some(TaskSpecPlacement {
                constraints: Some(constraints),
                ..TaskSpecPlacement::default()
            }),
            networks: Some(vec![NetworkAttachmentConfig {
                target: Some(name.clone()),
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
    };
    if let Err(e) = docker.create_service(spec, None).await {
        remove(docker, plan).await;
        return Err(format!("the swarm refused the job {name}: {e}"));
    }
    Ok(())
}

/// The box's egress proxy, when it has a provider to reach: a service of the same image on
/// the box's network (as [`EGRESS_ALIAS`]) and on a network of its own with a way out.
async fn create_egress(docker: &Docker, plan: &RemotePlan) -> Result<(), String> {
    if plan.egress.forwards.is_empty() {
        return Ok(());
    }
    let outside = bollard::models::NetworkCreateRequest {
        name: plan.outside_network(),
        driver: Some("overlay".to_owned()),
        attachable: Some(false),
        labels: Some(plan.labels()),
        ..Default::default()
    };
    super::create_network(docker, outside)
        .await
        .map_err(|e| format!("the swarm refused the box's egress network: {e}"))?;
    let name = plan.egress_name();
    if docker.inspect_service(&name, None).await.is_ok() {
        return Ok(());
    }
    let mut command = vec![
        "codehands".to_owned(),
        crate::EGRESS_COMMAND.to_owned(),
        EGRESS_PORT.to_string(),
    ];
    command.extend(plan.egress.allow().iter().map(|t| t.to_string()));
    let mut constraints = vec!["node.platform.os == linux".to_owned()];
    constraints.extend(plan.constraints.iter().cloned());
    let spec = ServiceSpec {
        name: Some(name.clone()),
        labels: Some(plan.labels()),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(plan.image.clone()),
                labels: Some(plan.labels()),
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
                    memory_bytes: Some(64 << 20),
                    pids: Some(256),
                }),
                ..TaskSpecResources::default()
            }),
            placement: Some(TaskSpecPlacement {
                constraints: Some(constraints),
                ..TaskSpecPlacement::default()
            }),
            networks: Some(vec![
                NetworkAttachmentConfig {
                    target: Some(plan.name()),
                    aliases: Some(vec![EGRESS_ALIAS.to_owned()]),
                    ..NetworkAttachmentConfig::default()
                },
                NetworkAttachmentConfig {
                    target: Some(plan.outside_network()),
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
    docker
        .create_service(spec, None)
        .await
        .map(drop)
        .map_err(|e| format!("the swarm refused the box's egress proxy {name}: {e}"))
}

/// Removes the service, its egress proxy, their networks and secrets (found by the box's
/// label); what is gone already is fine.
pub(super) async fn remove(docker: &Docker, plan: &RemotePlan) {
    let name = plan.name();
    let _ = docker.delete_service(&name).await;
    let _ = docker.delete_service(&plan.egress_name()).await;
    // A network goes once the tasks' containers have left it: try a few times below.
    let mut networks = vec![name.clone(), plan.outside_network()];
    let filters = HashMap::from([(
        "label".to_owned(),
        vec![format!("{LABEL_BOX}={}", plan.box_id)],
    )]);
    let options = ListSecretsOptionsBuilder::default()
        .filters(&filters)
        .build();
    // A secret in use by a task being removed is refused for a moment: try a few times.
    for _ in 0..40 {
        let mut left = Vec::new();
        for network in networks {
            match docker.remove_network(&network).await {
                Ok(())
                | Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => {}
                Err(_) => left.push(network),
            }
        }
        networks = left;
        let Ok(secrets) = docker.list_secrets(Some(options.clone())).await else {
            return;
        };
        if secrets.is_empty() && networks.is_empty() {
            return;
        }
        for secret in secrets {
            if let Some(id) = secret.id {
                let _ = docker.delete_secret(&id).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
