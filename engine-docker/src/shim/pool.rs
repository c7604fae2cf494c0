//! Warm boxes on a swarm (docs/remote-box.md, "Warm boxes"): boxes of a plan's kind started
//! ahead of the runs (`__remote-init --wait`), each taking one run and discarded after it, so
//! a run's path holds no service made and no container started, only an exec that hands its
//! inputs in (`handin`). The swarm's one way into a running task is its node's engine: a warm
//! box is placed on the node the caller's engine is (`node.id`), and the other nodes take the
//! runs a pool cannot (a box made per run).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use bollard::container::{AttachContainerResults, LogOutput};
use bollard::models::{
    MountType, TaskSpecRestartPolicy, TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, ListContainersOptionsBuilder, ListServicesOptionsBuilder,
};
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::handin::{CLAIM, CLAIMED, HANDED, WAIT_FLAG};
use crate::plan::{LABEL_BOX, RemotePlan};

/// The label of a warm box (value: the kind of box it is, [`key`]).
pub(crate) const LABEL_POOL: &str = "codehands.pool";
/// How a warm box's id starts (a plan's own is hex): its run's cleanup makes another.
pub(crate) const WARM_PREFIX: &str = "warm-";
/// How long a hand-in may take before the box is given up (and removed) and the run makes
/// its own: a live box answers in well under a second on a loaded node.
const HANDIN_LIMIT: Duration = Duration::from_secs(60);
/// How long a claim waits for the box's answer before the box counts as another run's (one
/// that claimed it first, from another home or machine, and whose agent now runs quietly).
const CLAIM_LIMIT: Duration = Duration::from_secs(15);
/// The most a cleanup waits for this machine's runs in warm boxes to end before it removes
/// its box and makes the next.
const QUIET_LIMIT: Duration = Duration::from_secs(60);
/// How old an empty note may be and still stand for a run going.
const STALE_NOTE: Duration = Duration::from_secs(600);

/// The kind of box `plan` needs: the same image, egress, limits, placement and worktree
/// folder (the box's tmpfs is the folder its worktree is made in); `None` when it has no
/// folder above it.
pub(super) fn key(plan: &RemotePlan) -> Option<String> {
    let folder = plan.worktree.parent()?;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |text: &str| {
        for byte in text.bytes().chain([0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(&plan.image);
    feed(&serde_json::to_string(&plan.egress.forwards).unwrap_or_default());
    feed(&serde_json::to_string(&plan.egress.hosts).unwrap_or_default());
    feed(&serde_json::to_string(&plan.limits).unwrap_or_default());
    plan.constraints.iter().for_each(|c| feed(c));
    feed(&folder.display().to_string());
    Some(format!("{hash:016x}"))
}

/// The running warm boxes of `plan`'s kind (container and box id); none without a pool.
pub(super) async fn free_boxes(docker: &Docker, plan: &RemotePlan) -> Vec<(String, String)> {
    let Some(key) = key(plan).filter(|_| plan.pool > 0) else {
        return Vec::new();
    };
    let filters = HashMap::from([
        ("label".to_owned(), vec![format!("{LABEL_POOL}={key}")]),
        ("status".to_owned(), vec!["running".to_owned()]),
    ]);
    let options = ListContainersOptionsBuilder::default()
        .filters(&filters)
        .build();
    docker
        .list_containers(Some(options))
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| Some((c.id?, c.labels?.get(LABEL_BOX)?.clone())))
        .collect()
}

/// Takes one of `boxes` ([`free_boxes`]) and hands it `inputs` and the plan's command: the
/// box's id and the attach its output comes through, or `None` when none was free (the run
/// then makes its own).
pub(super) async fn claim(
    docker: &Docker,
    plan: &RemotePlan,
    mut boxes: Vec<(String, String)>,
    inputs: &[u8],
    run_dir: Option<&Path>,
) -> Option<(String, Attached)> {
    // Runs started together start at different boxes.
    if !boxes.is_empty() {
        let at = (uuid::Uuid::new_v4().as_u128() % boxes.len() as u128) as usize;
        boxes.rotate_left(at);
    }
    let claims = run_dir.and_then(claims_dir);
    let mut command = plan.command(true);
    command.drain(..2);
    for (container, box_id) in boxes {
        // This machine's runs skip a box one of them has (the box's own lock decides
        // between callers on different machines).
        let note = format!("{box_id}{NOTE_SEP}{container}");
        if let Some(dir) = &claims
            && !claim_here(dir, &box_id, &note)
        {
            continue;
        }
        let handed =
            tokio::time::timeout(HANDIN_LIMIT, hand_in(docker, &container, &command, inputs))
                .await
                .unwrap_or_else(|_| Err("no answer".to_owned()));
        if !matches!(handed, Ok(Some(_)))
            && let Some(dir) = &claims
        {
            // Not ours: the note keeps this machine's runs from asking it again, and stands
            // for no run going.
            end_note(dir, &note);
        }
        match handed {
            Ok(Some(attached)) => return Some((box_id, attached)),
            Ok(None) => {}
            // A box that failed its hand-in takes no run: it goes.
            Err(_) => {
                let _ = docker.delete_service(&format!("codehands-{box_id}")).await;
            }
        }
    }
    None
}

/// Where this machine's runs note the warm boxes they took: beside `runs/` in the home.
fn claims_dir(run_dir: &Path) -> Option<PathBuf> {
    Some(run_dir.parent()?.parent()?.join("remote-pool-claims"))
}

/// Notes that a run of this machine takes the container of `box_id` that `note` names; false
/// when one has it. A note is of a container, not of its box: a box claimed by a run that went
/// away before it sent its inputs fails and the swarm starts it again under the same id, in a
/// container of its own that no run has (its old note then stands for no run going).
fn claim_here(dir: &Path, box_id: &str, note: &str) -> bool {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let taken = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(note))
        .is_ok();
    if taken {
        for old in notes_of(dir, box_id).filter(|old| old != note) {
            end_note(dir, &old);
        }
    }
    taken
}

/// What separates a note's box id from its container's.
const NOTE_SEP: char = '@';

/// The names of the notes of `box_id`'s containers in `dir`.
fn notes_of<'a>(dir: &Path, box_id: &'a str) -> impl Iterator<Item = String> + 'a {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(move |name| {
            name.strip_prefix(box_id)
                .is_some_and(|rest| rest.starts_with(NOTE_SEP))
        })
}

/// Notes that the run in the warm box `box_id` is over (the box still there until its
/// cleanup): the note stays, so no run of this machine asks the box, but counts no more as a
/// run going ([`wait_for_quiet`]).
pub(super) fn ended(run_dir: &Path, box_id: &str) {
    if let Some(dir) = claims_dir(run_dir) {
        for note in notes_of(&dir, box_id) {
            end_note(&dir, &note);
        }
    }
}

fn end_note(dir: &Path, note: &str) {
    let note = std::fs::OpenOptions::new().write(true).open(dir.join(note));
    if let Ok(mut note) = note {
        use std::io::Write;
        let _ = note.write_all(b"ended\n");
    }
}

/// Waits while runs of this machine are going in warm boxes (a note of theirs is empty), at
/// most [`QUIET_LIMIT`]: a cleanup's removal and the box it makes in the place of the one
/// taken are the engine's heaviest work (a container stopped, one started), and done while
/// runs started together still go, they slow those runs (docs/remote-box.md, "Warm boxes").
pub(super) fn wait_for_quiet(run_dir: &Path) {
    let Some(dir) = claims_dir(run_dir) else {
        return;
    };
    let started = std::time::Instant::now();
    while started.elapsed() < QUIET_LIMIT {
        let going = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok()?.metadata().ok())
            .any(|note| {
                // A note a run left behind long ago (its process killed) stops nobody.
                let fresh = note
                    .modified()
                    .ok()
                    .and_then(|at| at.elapsed().ok())
                    .is_some_and(|age| age < STALE_NOTE);
                note.len() == 0 && fresh
            });
        if !going {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Forgets this machine's note of the warm box `box_id` (its run is over, the box gone).
pub(super) fn unclaim(run_dir: &Path, box_id: &str) {
    if let Some(dir) = claims_dir(run_dir) {
        for note in notes_of(&dir, box_id) {
            let _ = std::fs::remove_file(dir.join(note));
        }
    }
}

/// A warm box handed its run: the attach to it, through which the run's output comes.
pub(super) struct Attached {
    /// The box's output from the hand-in on.
    pub(super) output: std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>,
    >,
    /// The box's stdin, kept open while the run lasts (the box reads nothing more from it).
    _input: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    /// What came after the box's last answer, in the same frames: the run's first output.
    pub(super) early: Vec<LogOutput>,
}

/// Attaches to `container` and takes it (docs/remote-box.md, "Warm boxes"): a claim line with
/// a token of our own; once the box names that token, the inputs and the init's arguments.
/// The attach once the box has them; `None` when another run had the box.
async fn hand_in(
    docker: &Docker,
    container: &str,
    command: &[String],
    inputs: &[u8],
) -> Result<Option<Attached>, String> {
    let options = AttachContainerOptionsBuilder::default()
        .stream(true)
        .stdin(true)
        .stdout(true)
        .stderr(true)
        .logs(false)
        .build();
    let AttachContainerResults {
        mut output,
        mut input,
    } = docker
        .attach_container(container, Some(options))
        .await
        .map_err(|e| e.to_string())?;
    let token = uuid::Uuid::new_v4().simple().to_string();
    let mut answers = Answers::default();
    input
        .write_all(format!("{CLAIM} {token}\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    input.flush().await.map_err(|e| e.to_string())?;
    // A box another run has may say nothing for long (its agent quiet): not ours.
    let claimed = tokio::time::timeout(CLAIM_LIMIT, answers.next(&mut output)).await;
    match claimed {
        Ok(Some(line)) if line == format!("{CLAIMED} {token}") => {}
        Ok(Some(_)) | Err(_) => return Ok(None),
        Ok(None) => return Err("the box ended before it answered".to_owned()),
    }
    let json = serde_json::to_vec(command).map_err(|e| e.to_string())?;
    input
        .write_all(format!("{} {}\n", inputs.len(), json.len()).as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    input.write_all(inputs).await.map_err(|e| e.to_string())?;
    input.write_all(&json).await.map_err(|e| e.to_string())?;
    input.flush().await.map_err(|e| e.to_string())?;
    match answers.next(&mut output).await {
        Some(line) if line == format!("{HANDED} {token}") => Ok(Some(Attached {
            output,
            _input: input,
            early: answers.rest(),
        })),
        other => Err(format!("the box said {other:?}")),
    }
}

/// The box's answers (whole lines of its stderr) as they come through the attach, and what
/// came after them.
#[derive(Default)]
struct Answers {
    err: Vec<u8>,
    out: Vec<u8>,
}

impl Answers {
    /// The next line of the box's stderr; `None` once the attach ended.
    async fn next(
        &mut self,
        output: &mut (impl futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin),
    ) -> Option<String> {
        loop {
            if let Some(end) = self.err.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.err.drain(..=end).collect();
                return Some(String::from_utf8_lossy(&line).trim_end().to_owned());
            }
            match output.next().await? {
                Ok(LogOutput::StdErr { message }) => self.err.extend_from_slice(&message),
                Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                    self.out.extend_from_slice(&message)
                }
                Ok(LogOutput::StdIn { .. }) => {}
                Err(_) => return None,
            }
        }
    }

    /// What came besides the answers, to be passed on as the run's output.
    fn rest(self) -> Vec<LogOutput> {
        let mut rest = Vec::new();
        if !self.out.is_empty() {
            rest.push(LogOutput::StdOut {
                message: self.out.into(),
            });
        }
        if !self.err.is_empty() {
            rest.push(LogOutput::StdErr {
                message: self.err.into(),
            });
        }
        rest
    }
}

/// Makes `count` warm boxes of `plan`'s kind (each a service of its own, started by the node
/// in the background); how many the swarm took.
pub(super) async fn make(docker: &Docker, plan: &RemotePlan, count: u32) -> Result<u32, String> {
    let Some(key) = key(plan) else {
        return Ok(0);
    };
    let folder = plan.worktree.parent().unwrap_or(Path::new("/"));
    let network = super::swarm_spec::ensure_network(docker, plan).await?;
    let image = super::swarm_spec::pinned_image(docker, &plan.image).await;
    // The caller's engine is the node the box is on: its exec reaches the box.
    let node = docker
        .info()
        .await
        .ok()
        .and_then(|info| info.swarm?.node_id)
        .ok_or("the engine is not a swarm's node")?;
    let mut made = 0;
    for _ in 0..count {
        let mut warm = plan.clone();
        warm.box_id = format!("{WARM_PREFIX}{}", uuid::Uuid::new_v4().simple());
        warm.constraints.push(format!("node.id == {node}"));
        let mut spec = super::swarm_spec::job_spec(&warm, &image, Vec::new(), &network);
        // The same kernel settings as a box made for its run (`security.rs`).
        crate::security::apply_to_service(&mut spec, &warm, docker);
        let mut labels = warm.labels();
        labels.remove(crate::plan::LABEL_SESSION);
        labels.insert(LABEL_POOL.to_owned(), key.clone());
        labels.insert(
            super::swarm_spec::LABEL_IMAGE.to_owned(),
            plan.image.clone(),
        );
        spec.labels = Some(labels.clone());
        if let Some(container) = spec
            .task_template
            .as_mut()
            .and_then(|t| t.container_spec.as_mut())
        {
            container.labels = Some(labels);
            container.command = Some(vec![
                "codehands".to_owned(),
                crate::INIT_COMMAND.to_owned(),
                WAIT_FLAG.to_owned(),
            ]);
            // The box waits on its stdin for its run (`handin`): the one way in that starts
            // no process in the box. The agent never gets that stdin (the init gives it a pipe).
            container.open_stdin = Some(true);
            // The run's worktree is made in the folder (the plan's own box mounts the
            // worktree itself, which a box started ahead does not know).
            container.dir = Some(folder.display().to_string());
            let worktree = plan.worktree.display().to_string();
            for mount in container.mounts.iter_mut().flatten() {
                if mount.target.as_deref() == Some(worktree.as_str())
                    && mount.typ == Some(MountType::TMPFS)
                {
                    mount.target = Some(folder.display().to_string());
                }
            }
        }
        // A node may turn a box down or the box fail before its run: the swarm starts it
        // again. A box whose run is over exits 0
        // (`__remote-init --wait`) and is not started again.
        if let Some(task) = spec.task_template.as_mut() {
            task.restart_policy = Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::ON_FAILURE),
                delay: Some(500_000_000),
                max_attempts: Some(20),
                ..TaskSpecRestartPolicy::default()
            });
        }
        match docker.create_service(spec, None).await {
            Ok(_) => made += 1,
            Err(e) => return Err(format!("the swarm refused a warm box: {e}")),
        }
    }
    Ok(made)
}

/// How many boxes of `plan`'s kind the swarm holds (warm, or taken and not yet removed). A
/// box the swarm could not start (its image gone, its node turned it down) is removed, not
/// counted: it would never run.
pub(super) async fn count(docker: &Docker, plan: &RemotePlan) -> usize {
    let Some(key) = key(plan) else {
        return 0;
    };
    let filters = HashMap::from([("label".to_owned(), vec![format!("{LABEL_POOL}={key}")])]);
    let options = ListServicesOptionsBuilder::default()
        .filters(&filters)
        .build();
    let services: Vec<String> = docker
        .list_services(Some(options))
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| s.id)
        .collect();
    if services.is_empty() {
        return 0;
    }
    let by_service = HashMap::from([("service".to_owned(), services.clone())]);
    let tasks = docker
        .list_tasks(Some(
            bollard::query_parameters::ListTasksOptionsBuilder::default()
                .filters(&by_service)
                .build(),
        ))
        .await
        .unwrap_or_default();
    let mut alive = 0;
    for service in services {
        let states: Vec<TaskState> = tasks
            .iter()
            .filter(|t| t.service_id.as_deref() == Some(&service))
            .filter_map(|t| t.status.as_ref()?.state)
            .collect();
        let dead = !states.is_empty()
            && states.iter().all(|s| {
                matches!(
                    s,
                    TaskState::REJECTED | TaskState::FAILED | TaskState::ORPHANED
                )
            });
        if dead {
            let _ = docker.delete_service(&service).await;
        } else {
            alive += 1;
        }
    }
    alive
}

/// After a turn of `plan` (its box removed): a warm box it took is replaced by one; a turn
/// that made its own box adds one while the pool is short of its size. So runs started
/// together never make more than one box each.
pub(super) async fn refill(docker: &Docker, plan: &RemotePlan) {
    if plan.pool == 0 {
        return;
    }
    let short = count(docker, plan).await < plan.pool as usize;
    if plan.box_id.starts_with(WARM_PREFIX) || short {
        let _ = make(docker, plan, 1).await;
    }
}

/// Removes every warm box (for a bench or test done with the engine), and waits while their
/// containers go (the network they are on goes after them): as long as fewer are left each
/// time it looks, and [`HANDIN_LIMIT`] at most while none goes.
pub(super) async fn remove_all(docker: &Docker) {
    let filters = HashMap::from([("label".to_owned(), vec![LABEL_POOL.to_owned()])]);
    let options = ListServicesOptionsBuilder::default()
        .filters(&filters)
        .build();
    for service in docker
        .list_services(Some(options))
        .await
        .unwrap_or_default()
    {
        if let Some(id) = service.id {
            let _ = docker.delete_service(&id).await;
        }
    }
    let containers = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let force = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
        .force(true)
        .build();
    let (mut fewest, mut progress) = (usize::MAX, std::time::Instant::now());
    while progress.elapsed() < HANDIN_LIMIT {
        let left = docker
            .list_containers(Some(containers.clone()))
            .await
            .unwrap_or_default();
        if left.is_empty() {
            return;
        }
        if left.len() < fewest {
            (fewest, progress) = (left.len(), std::time::Instant::now());
        }
        for id in left.into_iter().filter_map(|c| c.id) {
            let _ = docker.remove_container(&id, Some(force.clone())).await;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_of_box_is_the_image_egress_limits_placement_and_folder() {
        let plan: RemotePlan = serde_json::from_value(serde_json::json!({
            "engine": "swarm", "boxId": "b", "nonce": "n", "session": "s",
            "image": "codehands/remote:1", "dockerHost": null,
            "worktree": "/h/worktrees/repo/abcd1234", "program": "fake", "args": [],
            "limits": RemoteLimits::default(), "constraints": []
        }))
        .unwrap();
        let other_run = RemotePlan {
            box_id: "c".into(),
            nonce: "m".into(),
            session: "t".into(),
            worktree: "/h/worktrees/repo/ffff0000".into(),
            program: "claude".into(),
            ..plan.clone()
        };
        assert_eq!(key(&plan), key(&other_run), "one pool for the repo's runs");
        let other_image = RemotePlan {
            image: "codehands/remote:2".into(),
            ..plan.clone()
        };
        assert_ne!(key(&plan), key(&other_image));
        let other_repo = RemotePlan {
            worktree: "/h/worktrees/other/abcd1234".into(),
            ..plan.clone()
        };
        assert_ne!(key(&plan), key(&other_repo));
    }

    #[test]
    fn a_box_started_again_is_free_for_this_machines_runs_again() {
        let dir = tempfile::tempdir().unwrap();
        let (dir, note) = (dir.path(), |c: &str| format!("warm-1{NOTE_SEP}{c}"));
        assert!(claim_here(dir, "warm-1", &note("c1")));
        assert!(
            !claim_here(dir, "warm-1", &note("c1")),
            "one run per container"
        );
        // Its claimer went away: the box failed and runs again in another container.
        assert!(claim_here(dir, "warm-1", &note("c2")));
        let ended = std::fs::read(dir.join(note("c1"))).unwrap();
        assert!(!ended.is_empty(), "the old claim stands for no run going");
        assert!(std::fs::read(dir.join(note("c2"))).unwrap().is_empty());
        let _ = std::fs::remove_file(dir.join(note("c2")));
        assert_eq!(notes_of(dir, "warm-1").count(), 1);
    }

    use crate::plan::RemoteLimits;
}
