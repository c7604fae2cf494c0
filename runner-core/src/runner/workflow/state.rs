//! The driver's state on disk (`runs/<id>/workflow.json`) and its lock (`driver.lock`), so
//! a workflow outlives the process that drives it: the next driver (`codehands recover`)
//! reads where it was and goes on from there.
//!
//! The state is written before each phase's turn is planned and when the workflow ends,
//! replaced atomically (0600, never through a link), and read strictly: an unknown key or a
//! torn file is an error naming the file, never a workflow taken as finished.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::super::control::RunFiles;
use runner_contract::agent_name::AgentName;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::private::read_record;
use runner_contract::workflow::{Finding, Workflow};

/// The file of the state in a run folder.
pub(crate) const STATE_FILE: &str = runner_contract::run_folder::WORKFLOW;

/// The file of the driver's lock in a run folder.
const LOCK_FILE: &str = runner_contract::run_folder::DRIVER_LOCK;

/// Where a workflow's driver is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WorkflowState {
    /// The workflow run.
    pub workflow: Workflow,
    /// The task (`{task}`).
    pub task: String,
    /// The phase of the turn under way, or planned next.
    pub index: usize,
    /// Its review round.
    pub round: u32,
    /// The log's last seq when this phase's turn was about to be planned: its
    /// `phase.started` comes after it (none after it: the turn was never planned).
    pub logged_before: u64,
    /// The final text of each phase's last run, by index.
    #[serde(default)]
    pub texts: BTreeMap<usize, String>,
    /// The last review's findings above its gate.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Each agent's conversation in this session.
    #[serde(default)]
    pub conversations: BTreeMap<AgentName, String>,
    /// The workflow has ended (approval asked for, or failed, or it cannot go on).
    pub done: bool,
}

impl WorkflowState {
    /// Writes the state in `files`' run folder (atomically, privately).
    pub(crate) fn save(&self, files: &RunFiles) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::internal(e.to_string()))?;
        files.write_private(STATE_FILE, &json).map(drop)
    }

    /// The state in `files`' run folder: `None` when there is none (not a workflow), an
    /// error naming the file when it cannot be read or is not the state whole.
    pub(crate) fn load(files: &RunFiles) -> Result<Option<Self>> {
        read_record(
            &Self::path(files),
            "a valid workflow state",
            "move it away only if the session is no workflow's",
        )
    }

    pub(crate) fn path(files: &RunFiles) -> PathBuf {
        files.dir().join(STATE_FILE)
    }

    /// The name of the phase planned next (or under way).
    pub(crate) fn next_phase(&self) -> &str {
        self.workflow
            .phases
            .get(self.index)
            .map_or("?", |p| p.name.as_str())
    }
}

/// Removes the state and the lock of a workflow whose session was never made, and the run
/// folder when nothing else is in it.
pub(crate) fn forget(files: &RunFiles) {
    let _ = std::fs::remove_file(WorkflowState::path(files));
    let _ = std::fs::remove_file(files.dir().join(LOCK_FILE));
    let _ = std::fs::remove_dir(files.dir());
}

/// Refuses the approve of session `id` (now `state`) whose workflow has not finished, or
/// whose workflow state cannot be read: a change no review has seen must not be committed.
pub(crate) fn check_finished(
    files: &RunFiles,
    id: &runner_contract::ids::SessionId,
    state: runner_contract::session::SessionState,
) -> Result<()> {
    match WorkflowState::load(files)? {
        Some(flow) if !flow.done && state == runner_contract::session::SessionState::Stopped => {
            Err(Error::new(
                ErrorKind::IllegalMove,
                format!(
                    "the workflow {:?} of session {id} was stopped before it finished (phase \
                     {:?}, round {}): its change is not approved; reject it",
                    flow.workflow.name,
                    flow.next_phase(),
                    flow.round
                ),
            ))
        }
        Some(flow) if !flow.done => Err(Error::new(
            ErrorKind::IllegalMove,
            format!(
                "the workflow {:?} of session {id} has not finished: phase {:?} (round {}) is \
                 under way or next; run `codehands recover` to go on, or reject it",
                flow.workflow.name,
                flow.next_phase(),
                flow.round
            ),
        )),
        _ => Ok(()),
    }
}

/// The lock of a workflow's one driver (`runs/<id>/driver.lock`, held with `flock`): a
/// driver that dies lets go of it, so the next one can go on.
#[derive(Debug)]
pub(crate) struct DriverLock {
    _file: std::fs::File,
}

impl DriverLock {
    /// The lock if nobody holds it now.
    pub(crate) fn try_acquire(files: &RunFiles) -> Result<Option<Self>> {
        let file = files.try_lock(LOCK_FILE, "the workflow driver's lock")?;
        Ok(file.map(|file| Self { _file: file }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::session::SessionState;
    use runner_contract::workflow::PhaseKind;

    fn files() -> (tempfile::TempDir, RunFiles) {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("run"));
        files.prepare().unwrap();
        (dir, files)
    }

    fn state() -> WorkflowState {
        let workflow: Workflow = serde_json::from_value(serde_json::json!({
            "name": "w",
            "phase": [{
                "name": "plan",
                "kind": "plan",
                "agent": "a",
                "permissions": "read-only",
                "prompt": ["{task}"],
            }],
        }))
        .unwrap();
        assert_eq!(workflow.phases[0].kind, PhaseKind::Plan);
        WorkflowState {
            workflow,
            task: "t".into(),
            index: 0,
            round: 1,
            logged_before: 0,
            texts: BTreeMap::from([(0, "plan text".into())]),
            findings: Vec::new(),
            conversations: BTreeMap::new(),
            done: false,
        }
    }

    #[test]
    fn the_state_goes_and_comes_back_whole() {
        let (_dir, files) = files();
        assert_eq!(WorkflowState::load(&files).unwrap(), None);
        let state = state();
        state.save(&files).unwrap();
        assert_eq!(WorkflowState::load(&files).unwrap(), Some(state));
    }

    #[test]
    fn an_unknown_key_is_refused_naming_the_file() {
        let (_dir, files) = files();
        state().save(&files).unwrap();
        let path = WorkflowState::path(&files);
        let mut value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        value["doneish"] = serde_json::json!(true);
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        let e = WorkflowState::load(&files).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptRecord);
        assert!(e.message().contains("doneish"), "{e}");
        assert!(e.message().contains(&path.display().to_string()), "{e}");
    }

    #[test]
    fn a_torn_state_is_an_error_naming_the_file_and_approve_is_refused() {
        let (_dir, files) = files();
        state().save(&files).unwrap();
        let path = WorkflowState::path(&files);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let e = WorkflowState::load(&files).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptRecord);
        assert!(e.message().contains(&path.display().to_string()), "{e}");
        let id = runner_contract::ids::SessionId::new_random();
        assert!(check_finished(&files, &id, SessionState::AwaitingApproval).is_err());
    }

    #[test]
    fn approve_waits_for_the_workflow_to_finish() {
        let (_dir, files) = files();
        let id = runner_contract::ids::SessionId::new_random();
        check_finished(&files, &id, SessionState::AwaitingApproval).unwrap();
        let mut state = state();
        state.save(&files).unwrap();
        let e = check_finished(&files, &id, SessionState::AwaitingApproval).unwrap_err();
        assert!(e.message().contains("phase \"plan\""), "{e}");
        assert!(e.message().contains("codehands recover"), "{e}");
        let e = check_finished(&files, &id, SessionState::Stopped).unwrap_err();
        assert!(
            e.message().contains("stopped") && e.message().contains("reject it"),
            "{e}"
        );
        state.done = true;
        state.save(&files).unwrap();
        check_finished(&files, &id, SessionState::AwaitingApproval).unwrap();
    }

    #[test]
    fn one_driver_at_a_time() {
        let (_dir, files) = files();
        let lock = DriverLock::try_acquire(&files).unwrap();
        assert!(lock.is_some());
        assert!(DriverLock::try_acquire(&files).unwrap().is_none());
        drop(lock);
        assert!(DriverLock::try_acquire(&files).unwrap().is_some());
    }
}
