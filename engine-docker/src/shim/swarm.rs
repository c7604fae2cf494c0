//! The box as a Docker Swarm `replicated-job` service: the inputs travel as Swarm secrets, the
//! output and the result come back through the service's log (the manager relays it from
//! whichever node ran the task, which the caller may not reach).

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{
    SecretSpec, TaskSpecContainerSpecFile, TaskSpecContainerSpecSecrets, TaskState,
};
use bollard::query_parameters::{
    ListSecretsOptionsBuilder, ListTasksOptionsBuilder, LogsOptionsBuilder,
};
use futures::StreamExt;

use super::Output;
use crate::frame::{ResultCollector, SECRET_CHUNK};
use crate::init::SECRET_PREFIX;
use crate::phases::{AGENT, CREATE, Clock, FIRST_OUTPUT, RESULT, SCHEDULE, START};
use crate::plan::{LABEL_BOX, RemotePlan};

/// How often the task's state is asked for while it waits for a node and starts, and once
/// its result has come (its end is near).
const POLL_FAST: Duration = Duration::from_millis(150);
/// How often while the agent works: what ends the turn comes through the log, and a shim
/// per run asking fast would load the managers (64 runs: 400 requests a second).
const POLL_SLOW: Duration = Duration::from_millis(1000);

/// What a turn's driving holds besides the engine and the plan.
pub(super) struct Turn<'a> {
    pub(super) output: &'a mut Output,
    pub(super) stops: &'a mut super::Stops,
    pub(super) clock: &'a mut Clock,
    /// The run's folder, where the plan is: a turn that takes a warm box writes it there
    /// again, naming that box, so a driver started again and the cleanup find it.
    pub(super) run_dir: Option<&'a std::path::Path>,
}

/// Runs the job of `plan` to its end (or adopts it when the service exists already, or hands
/// the turn to a warm box, whose id `plan` then has) and applies its result; the exit code is
/// the agent's.
pub(super) async fn run(
    docker: &Docker,
    plan: &mut RemotePlan,
    env: &[(String, String)],
    stdin: &[u8],
    turn: &mut Turn<'_>,
) -> Result<i32, String> {
    let Turn {
        output,
        stops,
        clock,
        run_dir,
    } = turn;
    let inputs = super::inputs(plan, env, stdin)?;
    let mut warm = false;
    let mut attached = None;
    // A shim before this one may have made the box (asked while the free warm boxes are
    // listed); a first one notes in the plan that it drives the turn, and asks nothing.
    let own = plan.name();
    let (made, boxes) = tokio::join!(
        async {
            if plan.driven {
                docker.inspect_service(&own, None).await.is_ok()
            } else {
                false
            }
        },
        super::pool::free_boxes(docker, plan)
    );
    if !plan.driven {
        plan.driven = true;
        save_plan(plan, *run_dir);
    }
    if !made {
        match super::pool::claim(docker, plan, boxes, &inputs, *run_dir).await {
            Some((box_id, attach)) => {
                attached = Some(attach);
                plan.box_id = box_id;
                save_plan(plan, *run_dir);
                clock.warm(&plan.box_id);
                warm = true;
                // Scheduled and started ahead: the hand-in was the whole of the making.
                for phase in [CREATE, SCHEDULE, START] {
                    clock.mark(phase);
                }
            }
            None => {
                create(docker, plan, &inputs).await?;
                clock.mark(CREATE);
            }
        }
    }
    let plan = &*plan;
    let name = plan.name();
    let (mut out, mut err) = (0u64, 0u64);
    let mut attempt = 0u64;
    let mut whole = false;
    let code = loop {
        let ended = tokio::select! {
            () = stops.recv() => None,
            ended = async {
                // A warm box's output comes through the attach its hand-in made; should that
                // end before the run's end lines, the log has it all from its start.
                if let Some(attach) = attached.as_mut() {
                    if let Some(end) = follow_attached(attach, output, (&mut out, &mut err), clock).await {
                        return end;
                    }
                    attached = None;
                    output.replay(out, err);
                }
                follow(docker, &name, output, (&mut out, &mut err), clock, warm).await
            } => Some(ended),
        };
        match ended {
            None => {
                output.finish(true);
                remove(docker, plan).await;
                return Ok(143);
            }
            // Both streams came to their end lines: nothing is on its way.
            Some(End::Whole(code)) => {
                whole = true;
                break code;
            }
            // A warm box's task exits 0 whatever its agent did: its exit line says.
            Some(End::Exited(code)) => break output.exit().0.get().unwrap_or(code),
            // The node turned the task down before it started (the scheduler placed more
            // tasks than their reservations fit, a known race of the swarm's): the agent never
            // ran, so the job is made again, after a pause that grows.
            Some(End::Rejected(why)) if attempt < 30 && !warm => {
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
    clock.mark(AGENT);
    // The log from its start once more, now that the task has ended (or sent its last line):
    // a follow opened before the task ran may miss its first lines. What was passed on
    // already is skipped.
    // A warm box's log was followed from before its run began: it has come whole.
    if !whole {
        output.replay(out, err);
        read_log(docker, &name, output, false, &mut 0, &mut 0).await;
    }
    let mut collectors = output.take_collectors().into_iter();
    let collector = collectors.next().ok_or("no result collector")?;
    // A box whose agent's home was over its limits sent none: the next turn starts afresh.
    if let Some(home) = collectors.next().and_then(|c| c.finish().ok()) {
        plan.keep_home(&home);
    }
    let applied = collector
        .finish()
        .and_then(|tar| super::apply_result(plan, &tar, None));
    output.finish(applied.is_ok());
    clock.mark(RESULT);
    if applied.is_err() {
        remove(docker, plan).await;
    }
    applied.map_err(|e| format!("the box's result was refused: {e}"))?;
    Ok(code)
}

/// Writes `plan` again in the run's folder (a shim started again, and the cleanup, read it).
fn save_plan(plan: &RemotePlan, run_dir: Option<&std::path::Path>) {
    if let Some(dir) = run_dir {
        let _ = runner_contract::private::PrivateRoot::new(dir)
            .replace_file(&RemotePlan::file_in(dir), &plan.to_json());
    }
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
    /// The agent exited with this code, and the box's stdout and stderr came to their end
    /// lines (the task may still be ending).
    Whole(i32),
    /// A node turned the task down before it ran: the job may be made again.
    Rejected(String),
    /// The swarm could not run it, or lost it.
    Failed(String),
}

/// A warm box's output through the attach its hand-in made, until both streams came to their
/// end lines (the agent's exit code then); `None` when the attach ended before.
async fn follow_attached(
    attach: &mut super::pool::Attached,
    output: &mut Output,
    (out, err): (&mut u64, &mut u64),
    clock: &mut Clock,
) -> Option<End> {
    let first_output = output.first_output();
    let result_ended = output.result_ended();
    let (exited, _) = output.exit();
    let stdout_ended = output.stdout_ended();
    let mut early = std::mem::take(&mut attach.early).into_iter();
    loop {
        let chunk = match early.next() {
            Some(chunk) => chunk,
            None => attach.output.next().await?.ok()?,
        };
        match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                *out += output.stdout(&message)
            }
            LogOutput::StdErr { message } => *err += output.stderr(&message),
            LogOutput::StdIn { .. } => {}
        }
        if let Some(at) = first_output.get() {
            clock.mark_at(FIRST_OUTPUT, at);
        }
        if let Some(at) = result_ended.get() {
            clock.mark_at(AGENT, at);
        }
        if let Some(code) = exited.get()
            && stdout_ended.get()
        {
            return Some(End::Whole(code));
        }
    }
}

/// The log as it comes while the task runs; how the task ended. The phases are marked as the
/// task's state and the log show them.
/// With `warm` (the log is followed from before the run began, so nothing is missed), the
/// turn ends once both streams came to their end lines; else once the task has ended, since
/// the log is then read once more from its start and must be there whole.
async fn follow(
    docker: &Docker,
    name: &str,
    output: &mut Output,
    (out, err): (&mut u64, &mut u64),
    clock: &mut Clock,
    warm: bool,
) -> End {
    let first_output = output.first_output();
    let result_ended = output.result_ended();
    let (exited, exit_notice) = output.exit();
    let stdout_ended = output.stdout_ended();
    let mut reading = Box::pin(read_log(docker, name, output, true, out, err));
    let mut done = false;
    let mut wait = POLL_FAST;
    loop {
        tokio::select! {
            () = &mut reading, if !done => done = true,
            // The box's last line: the agent has ended. Its stdout may still be on its way
            // (the engine copies each stream on its own): the task's end is asked for now,
            // and often, until the engine has it.
            () = exit_notice.notified() => {
                if let Some(code) = exited.get() {
                    clock.mark(AGENT);
                    if warm && stdout_ended.get() {
                        return End::Whole(code);
                    }
                    wait = POLL_FAST;
                }
            }
            () = tokio::time::sleep(wait) => {
                if let Some(at) = first_output.get() {
                    clock.mark_at(FIRST_OUTPUT, at);
                }
                let (state, end) = task_state(docker, name).await;
                if let Some(end) = end {
                    return end;
                }
                if state >= Some(TaskState::ASSIGNED) {
                    clock.mark(SCHEDULE);
                }
                if state >= Some(TaskState::RUNNING) {
                    clock.mark(START);
                }
                wait = if exited.get().is_some() {
                    POLL_FAST
                } else if let Some(at) = result_ended.get() {
                    clock.mark_at(AGENT, at);
                    POLL_FAST
                } else if clock.marked(START) {
                    POLL_SLOW
                } else {
                    POLL_FAST
                };
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

/// The state of the service's task, and how it ended once it has.
async fn task_state(docker: &Docker, name: &str) -> (Option<TaskState>, Option<End>) {
    let mut state = None;
    let end = task_end(docker, name, &mut state).await;
    (state, end)
}

async fn task_end(docker: &Docker, name: &str, state: &mut Option<TaskState>) -> Option<End> {
    let filters = HashMap::from([("service".to_owned(), vec![name.to_owned()])]);
    let options = ListTasksOptionsBuilder::default().filters(&filters).build();
    let tasks = match docker.list_tasks(Some(options)).await {
        Ok(tasks) => tasks,
        Err(e) => return Some(End::Failed(format!("the swarm lost the job {name}: {e}"))),
    };
    // No task, and no service: something else removed the job (it will not end by itself).
    if tasks.is_empty()
        && let Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) = docker.inspect_service(name, None).await
    {
        return Some(End::Failed(format!(
            "the job {name} is gone from the swarm (removed by another hand)"
        )));
    }
    for task in tasks {
        let status = task.status.unwrap_or_default();
        *state = (*state).max(status.state);
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
    crate::security::check_engine(plan, docker)?;
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
    let network = match super::swarm_spec::ensure_network(docker, plan).await {
        Ok(network) => network,
        Err(e) => {
            remove(docker, plan).await;
            return Err(e);
        }
    };
    let image = super::swarm_spec::pinned_image(docker, plan.box_image()).await;
    let mut spec = super::swarm_spec::job_spec(plan, &image, secrets, &network);
    crate::security::apply_to_service(&mut spec, plan, docker);
    if let Err(e) = docker.create_service(spec, None).await {
        remove(docker, plan).await;
        return Err(format!("the swarm refused the job {name}: {e}"));
    }
    Ok(())
}

/// Removes the job's service, its container and its secrets (found by the box's label); what
/// is gone already is fine. What the engine's boxes share stays (`swarm_spec`).
pub(super) async fn remove(docker: &Docker, plan: &RemotePlan) {
    // The service's tasks as they are now: a task still being started when its service goes
    // may get its container after that (Docker 20.10), so the removal lasts until they are
    // gone from the swarm.
    let name = plan.name();
    let by_service = HashMap::from([("service".to_owned(), vec![name.clone()])]);
    let tasks: Vec<String> = docker
        .list_tasks(Some(
            ListTasksOptionsBuilder::default()
                .filters(&by_service)
                .build(),
        ))
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| t.id)
        .collect();
    let _ = docker.delete_service(&name).await;
    let by_box = HashMap::from([(
        "label".to_owned(),
        vec![format!("{LABEL_BOX}={}", plan.box_id)],
    )]);
    let by_id = HashMap::from([("id".to_owned(), tasks.clone())]);
    let containers = bollard::query_parameters::ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&by_box)
        .build();
    let secrets = ListSecretsOptionsBuilder::default()
        .filters(&by_box)
        .build();
    let force = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
        .force(true)
        .build();
    for attempt in 0..80u64 {
        let tasks_left = !tasks.is_empty()
            && docker
                .list_tasks(Some(
                    ListTasksOptionsBuilder::default().filters(&by_id).build(),
                ))
                .await
                .is_ok_and(|t| !t.is_empty());
        // A job's ended task keeps its container after the service is gone (Docker 20.10):
        // the engine we reach removes it when it ran there (a one-node swarm, the manager).
        let found = docker
            .list_containers(Some(containers.clone()))
            .await
            .unwrap_or_default();
        for container in &found {
            if let Some(id) = &container.id {
                let _ = docker.remove_container(id, Some(force.clone())).await;
            }
        }
        // A secret in use by a task being removed is refused for a moment.
        let Ok(left) = docker.list_secrets(Some(secrets.clone())).await else {
            return;
        };
        for secret in &left {
            if let Some(id) = &secret.id {
                let _ = docker.delete_secret(id).await;
            }
        }
        if !tasks_left && found.is_empty() && left.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50 * (attempt + 1).min(5))).await;
    }
}
