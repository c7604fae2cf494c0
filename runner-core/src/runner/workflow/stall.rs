//! A workflow whose driver died tells the truth: between two phases its session awaits
//! approval while its workflow has not finished, and nobody drives it. Such a workflow is
//! *stalled*; every command that shows state says so ([`LocalRunner::workflow_progress`]:
//! `sessions`, `report`), and a caller that follows the session's events goes on with it
//! ([`relaunch`], from `follow.rs`): a detached `__supervise` with no turn to run (the
//! codehands binary) or a task of this process (a library) resumes it (`resume`), as
//! `recover` does. A command that only looks never starts a driver.

use super::super::control::{RunFiles, SupervisorLock};
use super::state::{DriverLock, WorkflowState};
use crate::runner::heal;
use crate::runner::parts::{Launcher, LocalRunner, Records};
use runner_contract::error::Result;
use runner_contract::ids::SessionId;
use runner_contract::session::{SessionRecord, SessionState};

/// Where a session's workflow is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkflowProgress {
    /// No workflow, or one that has finished: the session's state says it all.
    Settled,
    /// A driver is at it (a phase's turn runs, or it is between two phases).
    Driven {
        /// The phase under way or next.
        phase: String,
    },
    /// Its driver died between two phases and nobody drives it: `recover`, or the next
    /// command that looks at it, goes on.
    Stalled {
        /// The phase next.
        phase: String,
    },
}

impl WorkflowProgress {
    /// `stalled` for a stalled workflow, else the session's state as the record says it.
    pub fn state_word(&self, state: SessionState) -> String {
        match self {
            Self::Stalled { .. } => "stalled".to_owned(),
            Self::Driven { .. } if state == SessionState::AwaitingApproval => "running".to_owned(),
            _ => state.to_string(),
        }
    }
}

/// Where the workflow of `record` is; `Settled` for a session with none or whose state
/// cannot be read (approve says why then).
pub(crate) fn progress(records: &Records, record: &SessionRecord) -> WorkflowProgress {
    if !matches!(
        record.state,
        SessionState::AwaitingApproval | SessionState::Running | SessionState::Queued
    ) {
        return WorkflowProgress::Settled;
    }
    let files = RunFiles::in_home(&records.home, &record.session_id);
    let Ok(Some(state)) = WorkflowState::load(&files) else {
        return WorkflowProgress::Settled;
    };
    if state.done {
        return WorkflowProgress::Settled;
    }
    let phase = state.next_phase().to_owned();
    if record.state != SessionState::AwaitingApproval
        || SupervisorLock::is_held(&files)
        || files.turn().is_some()
    {
        return WorkflowProgress::Driven { phase };
    }
    match DriverLock::try_acquire(&files) {
        Ok(Some(_free)) => WorkflowProgress::Stalled { phase },
        _ => WorkflowProgress::Driven { phase },
    }
}

/// Goes on with the stalled workflow of session `id` somewhere that outlives the caller:
/// a detached supervisor process when the runner has one, else a task of this process.
pub(crate) fn relaunch(launcher: &Launcher, id: SessionId) -> Result<()> {
    if launcher.run.settings.supervisor.is_some() {
        // `codehands __supervise ID` resumes the workflow once it finds no turn to run.
        return heal::launch(launcher, id);
    }
    let launcher_now = launcher.clone();
    let task = tokio::spawn(async move {
        if let Ok(record) = launcher_now.run.records.store.get(&id)
            && let Err(e) = super::resume(&launcher_now, &record).await
        {
            tracing::warn!(session = %id, "cannot go on with the workflow: {e}");
        }
    });
    launcher.keep(task.abort_handle());
    Ok(())
}

impl LocalRunner {
    /// Where session `record`'s workflow is: settled (no workflow, or finished), driven, or
    /// stalled (its driver died between two phases).
    pub fn workflow_progress(&self, record: &SessionRecord) -> WorkflowProgress {
        progress(self.records(), record)
    }

    /// `__supervise` launched with no turn to run ([`relaunch`]): the stalled workflow
    /// goes on here.
    pub(crate) async fn drive_if_stalled(&self, id: &SessionId) -> Result<()> {
        let record = self.records().store.get(id)?;
        super::resume(self.launcher(), &record).await.map(drop)
    }
}
