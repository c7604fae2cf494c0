//! The box as one container on a Docker engine: inputs uploaded into its own volume before it
//! starts, output from the engine's log, the result downloaded from its worktree.

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::errors::Error as DockerError;
use bollard::models::{
    ContainerCreateBody, EndpointSettings, HostConfig, Mount, MountType, NetworkConnectRequest,
    NetworkCreateRequest, NetworkingConfig,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder,
    KillContainerOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use futures::StreamExt;

use super::Output;
use crate::egress::{EGRESS_ALIAS, EGRESS_PORT};
use crate::phases::{AGENT, CREATE, Clock, FIRST_OUTPUT, RESULT, START};
use crate::plan::{BOX_DIR, RemotePlan};

/// Runs the box of `plan` to its end (or adopts it when it exists already) and applies its
/// result; the exit code is the agent's.
pub(super) async fn run(
    docker: &Docker,
    plan: &RemotePlan,
    env: &[(String, String)],
    stdin: &[u8],
    output: &mut Output,
    stops: &mut super::Stops,
    clock: &mut Clock,
) -> Result<i32, String> {
    let name = plan.name();
    if docker.inspect_container(&name, None).await.is_err() {
        create(docker, plan, &super::inputs(plan, env, stdin)?).await?;
        // The engine started it: no scheduler between.
        clock.mark(CREATE);
        clock.mark(START);
    }
    let first_output = output.first_output();
    let stopped = tokio::select! {
        () = stops.recv() => true,
        () = stream(docker, &name, output) => false,
    };
    if stopped {
        output.finish(true);
        kill(docker, &name).await;
        remove(docker, plan).await;
        return Ok(143);
    }
    if let Some(at) = first_output.get() {
        clock.mark_at(FIRST_OUTPUT, at);
    }
    let mut waited = docker.wait_container(&name, None);
    let _ = waited.next().await;
    clock.mark(AGENT);
    let state = docker
        .inspect_container(&name, None)
        .await
        .map_err(|e| format!("the engine lost the box {name}: {e}"))?
        .state
        .unwrap_or_default();
    let code = state.exit_code.unwrap_or(125) as i32;
    let result = download(docker, plan).await;
    if let Some(home) = download_home(docker, plan).await {
        plan.keep_home(&home);
    }
    let strip = plan.worktree.file_name().and_then(|n| n.to_str());
    let applied = result.and_then(|tar| super::apply_result(plan, &tar, strip));
    output.finish(applied.is_ok());
    clock.mark(RESULT);
    if applied.is_err() {
        remove(docker, plan).await;
    }
    match applied {
        Ok(()) => Ok(code),
        Err(e) => Err(format!("the box's result was refused: {e}")),
    }
}

async fn create(docker: &Docker, plan: &RemotePlan, inputs: &[u8]) -> Result<(), String> {
    let name = plan.name();
    let volume = |target: &str| Mount {
        target: Some(target.to_owned()),
        typ: Some(MountType::VOLUME),
        ..Mount::default()
    };
    let worktree = plan.worktree.display().to_string();
    let limits = plan.limits;
    // No network, or one of the box's own with no route out whose only other member is the
    // egress proxy (`crate::egress`).
    let network = if plan.egress.forwards.is_empty() {
        "none".to_owned()
    } else {
        if let Err(e) = create_egress(docker, plan).await {
            remove(docker, plan).await;
            return Err(e);
        }
        name.clone()
    };
    let mut body = ContainerCreateBody {
        image: Some(plan.box_image().to_owned()),
        cmd: Some(plan.command(false)),
        env: Some(plan.public_env()),
        labels: Some(plan.labels()),
        working_dir: Some(worktree.clone()),
        network_disabled: Some(plan.egress.forwards.is_empty()),
        host_config: Some(HostConfig {
            network_mode: Some(network),
            extra_hosts: Some(
                plan.egress
                    .hosts
                    .iter()
                    .map(|(host, ip)| format!("{host}:{ip}"))
                    .collect(),
            ),
            memory: Some(limits.memory_bytes),
            memory_swap: Some(limits.memory_bytes),
            nano_cpus: Some(limits.nano_cpus),
            pids_limit: Some(limits.pids),
            readonly_rootfs: Some(true),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            init: Some(true),
            // Anonymous volumes, gone with the container (`v`): the box's own folder (inputs,
            // home) and its checkout, at the worktree's path.
            mounts: Some(vec![volume(BOX_DIR), volume(&worktree)]),
            tmpfs: Some(std::collections::HashMap::from([(
                "/tmp".to_owned(),
                "rw,nosuid,nodev,size=512m".to_owned(),
            )])),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    };
    if let Some(host) = body.host_config.as_mut() {
        crate::security::apply_to_container(host, plan);
    }
    let options = CreateContainerOptionsBuilder::default().name(&name).build();
    if let Err(e) = docker.create_container(Some(options), body).await {
        remove(docker, plan).await;
        return Err(format!(
            "the engine could not create the box {name}: {e} (is {} loaded on it? `cargo xtask images`)",
            plan.box_image()
        ));
    }
    let upload = UploadToContainerOptionsBuilder::default()
        .path(BOX_DIR)
        .build();
    let archive = in_folder(inputs);
    let uploaded = docker
        .upload_to_container(&name, Some(upload), bollard::body_full(archive.into()))
        .await;
    if let Err(e) = uploaded {
        remove(docker, plan).await;
        return Err(format!("the engine refused the box's inputs: {e}"));
    }
    docker
        .start_container(&name, None)
        .await
        .map_err(|e| format!("the engine could not start the box {name}: {e}"))
}

/// `inputs` as `in/inputs.tar` (0400) in a tar for the upload.
fn in_folder(inputs: &[u8]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o700);
    dir.set_size(0);
    let _ = builder.append_data(&mut dir, "in/", std::io::empty());
    let mut file = tar::Header::new_gnu();
    file.set_size(inputs.len() as u64);
    file.set_mode(0o400);
    let _ = builder.append_data(&mut file, "in/inputs.tar", inputs);
    builder.into_inner().unwrap_or_default()
}

/// The box's log from its first byte, passed on until the box ends.
async fn stream(docker: &Docker, name: &str, output: &mut Output) {
    let options = LogsOptionsBuilder::default()
        .follow(true)
        .stdout(true)
        .stderr(true)
        .build();
    let mut logs = docker.logs(name, Some(options));
    while let Some(Ok(chunk)) = logs.next().await {
        match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                output.stdout(&message);
            }
            LogOutput::StdErr { message } => {
                output.stderr(&message);
            }
            LogOutput::StdIn { .. } => {}
        }
    }
}

async fn download(docker: &Docker, plan: &RemotePlan) -> Result<Vec<u8>, String> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(&plan.worktree.display().to_string())
        .build();
    let mut stream = docker.download_from_container(&plan.name(), Some(options));
    let mut tar = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| format!("the engine did not hand over the box's result: {e}"))?;
        tar.extend_from_slice(&chunk);
        if tar.len() as u64 > super::RESULT_CAP {
            return Err(format!(
                "the box's result is over its cap ({} bytes): refused, nothing applied",
                super::RESULT_CAP
            ));
        }
    }
    Ok(tar)
}

/// The agent's home as the init packed it (`HOME_TAR`), when it did and within its cap.
async fn download_home(docker: &Docker, plan: &RemotePlan) -> Option<Vec<u8>> {
    use std::io::Read;
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(crate::init::HOME_TAR)
        .build();
    let mut stream = docker.download_from_container(&plan.name(), Some(options));
    let mut archive = Vec::new();
    while let Some(chunk) = stream.next().await {
        archive.extend_from_slice(&chunk.ok()?);
        if archive.len() > crate::frame::HOME_CAP + (1 << 20) {
            return None;
        }
    }
    // The engine hands a file over as a tar holding it.
    let mut entries = tar::Archive::new(&archive[..]);
    let mut entry = entries.entries().ok()?.next()?.ok()?;
    let mut home = Vec::new();
    entry
        .by_ref()
        .take(crate::frame::HOME_CAP as u64)
        .read_to_end(&mut home)
        .ok()?;
    Some(home)
}

async fn kill(docker: &Docker, name: &str) {
    let options = KillContainerOptionsBuilder::default()
        .signal("KILL")
        .build();
    let _ = docker.kill_container(name, Some(options)).await;
}

/// The box's network (internal, no address of the machine on it) and its egress proxy: a container of the same
/// image on that network, as [`EGRESS_ALIAS`], and on the engine's default bridge.
async fn create_egress(docker: &Docker, plan: &RemotePlan) -> Result<(), String> {
    let name = plan.name();
    // Internal: nothing is routed out. And no address of the engine's machine on the bridge:
    // an internal bridge still has one (its gateway), through which a box would reach every
    // port of the machine, on all of its addresses (tested).
    let network = NetworkCreateRequest {
        name: name.clone(),
        driver: Some("bridge".to_owned()),
        internal: Some(true),
        labels: Some(plan.labels()),
        options: Some(std::collections::HashMap::from([(
            "com.docker.network.bridge.inhibit_ipv4".to_owned(),
            "true".to_owned(),
        )])),
        ..NetworkCreateRequest::default()
    };
    super::create_network(docker, network)
        .await
        .map_err(|e| format!("the engine refused the box's network: {e}"))?;
    let proxy = plan.egress_name();
    let mut cmd = vec![
        "codehands".to_owned(),
        crate::EGRESS_COMMAND.to_owned(),
        EGRESS_PORT.to_string(),
    ];
    cmd.extend(plan.egress.allow().iter().map(|t| t.to_string()));
    let body = ContainerCreateBody {
        image: Some(plan.image.clone()),
        cmd: Some(cmd),
        env: Some(plan.public_env()),
        labels: Some(plan.labels()),
        user: Some("65534:65534".to_owned()),
        host_config: Some(HostConfig {
            network_mode: Some(name.clone()),
            memory: Some(64 << 20),
            pids_limit: Some(256),
            readonly_rootfs: Some(true),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            init: Some(true),
            ..HostConfig::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(std::collections::HashMap::from([(
                name.clone(),
                EndpointSettings {
                    aliases: Some(vec![EGRESS_ALIAS.to_owned()]),
                    ..EndpointSettings::default()
                },
            )])),
        }),
        ..ContainerCreateBody::default()
    };
    let options = CreateContainerOptionsBuilder::default()
        .name(&proxy)
        .build();
    match docker.create_container(Some(options), body).await {
        Ok(_) => {}
        Err(DockerError::DockerResponseServerError {
            status_code: 409, ..
        }) => return Ok(()),
        Err(e) => {
            return Err(format!(
                "the engine could not create the box's egress proxy: {e}"
            ));
        }
    }
    let outside = NetworkConnectRequest {
        container: proxy.clone(),
        endpoint_config: None,
    };
    docker
        .connect_network("bridge", outside)
        .await
        .map_err(|e| format!("the egress proxy could not join the engine's bridge: {e}"))?;
    docker
        .start_container(&proxy, None)
        .await
        .map_err(|e| format!("the engine could not start the box's egress proxy: {e}"))
}

/// Removes the box's container and volumes, its egress proxy and its network; what is gone
/// already is fine.
pub(super) async fn remove(docker: &Docker, plan: &RemotePlan) {
    remove_container(docker, &plan.name()).await;
    if plan.egress.forwards.is_empty() {
        return;
    }
    remove_container(docker, &plan.egress_name()).await;
    match docker.remove_network(&plan.name()).await {
        Ok(())
        | Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        Err(e) => eprintln!(
            "codehands: the box's network {} could not be removed: {e}; remove it with `docker network rm {}`",
            plan.name(),
            plan.name()
        ),
    }
}

async fn remove_container(docker: &Docker, name: &str) {
    let options = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(name, Some(options)).await {
        Ok(())
        | Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        Err(e) => eprintln!(
            "codehands: the box {name} could not be removed: {e}; remove it with `docker rm -fv {name}`"
        ),
    }
}
