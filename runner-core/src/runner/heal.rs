//! Self-healing status: a `running` session nobody supervises is taken over the moment a
//! runner looks at it (recover, reading a session, following its events, stopping it).
//!
//! - Its agent is alive (pid + start time), or it was never spawned: a supervisor is started
//!   for it (a detached supervisor process when the runner has one, else a task of this
//!   runner), which adopts the agent with no lost and no repeated event.
//! - Its agent ended while nobody watched: the turn is finished here and now from the
//!   agent's output, exactly as a watched one would have been.
//! - No turn was ever planned (a start cut short before the agent could run) and its
//!   starter is gone: the session fails as interrupted, the only case with nothing to
//!   finish from.

use super::control::{RunFiles, SupervisorLock};
use super::disk;
use super::ending::fail_unplanned;
use super::log;
use super::parts::Launcher;
use super::run;
use runner_contract::error::Result;
use runner_contract::ids::SessionId;
use runner_contract::session::{SessionRecord, SessionState};
use runner_process::tree::{self, ProcessIdentity};

/// How long a running session may go unsupervised before a follower heals it (a supervisor
/// just launched needs a moment to take its lock).
pub(super) const UNSUPERVISED_GRACE: std::time::Duration = std::time::Duration::from_millis(750);

/// What [`heal`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Healed {
    /// Not running, or a supervisor (or a start under way) has it.
    Nothing,
    /// A supervisor was started for it.
    Adopted,
    /// Its turn was finished from the agent's output.
    Finished,
    /// It failed as interrupted.
    Failed,
}

/// Heals one session (see the module's documentation).
pub(super) async fn heal(launcher: &Launcher, record: &SessionRecord) -> Result<Healed> {
    heal_session(launcher, record)
        .await
        .map_err(|e| disk::named(launcher.run.records.home.root(), e))
}

async fn heal_session(launcher: &Launcher, record: &SessionRecord) -> Result<Healed> {
    if !matches!(record.state, SessionState::Running | SessionState::Queued) {
        return Ok(Healed::Nothing);
    }
    let id = record.session_id;
    let files = RunFiles::in_home(&launcher.run.records.home, &id);
    if SupervisorLock::is_held(&files) {
        return Ok(Healed::Nothing);
    }
    // A log that cannot be read (a line torn in its middle) is this session's error alone,
    // said before a supervisor is started that could only fail on it.
    log::scan(&files.events(), u64::MAX, |_| false)?;
    let Some(plan) = files.turn() else {
        let starting = files
            .runner()
            .is_some_and(|r| r.is_alive() && Some(r) != ProcessIdentity::current());
        if starting {
            return Ok(Healed::Nothing);
        }
        fail_unplanned(&launcher.run, record).await?;
        return Ok(Healed::Failed);
    };
    if record.state != SessionState::Running {
        return Ok(Healed::Nothing);
    }
    let agent_alive = match files.agent_run().filter(|run| run.turn == plan.turn) {
        Some(run) => match run.process {
            // Alive, or its output still on its way to the file.
            Some(process) => process.is_alive() || run.relay.is_some_and(|r| r.is_alive()),
            None => tree::find_session_leader_in(&record.worktree_path).is_some(),
        },
        None => {
            // Never spawned. A turn planned a moment ago has its supervisor on the way (it
            // takes the lock once its process runs): a second one would only cost the run
            // a process start; a follower heals it if that one never comes.
            if files.turn_age().is_some_and(|age| age < UNSUPERVISED_GRACE) {
                return Ok(Healed::Nothing);
            }
            // A stop asked for meanwhile ends it here; otherwise it needs a supervisor to
            // start it.
            !files.stop_requested()
        }
    };
    if agent_alive {
        launch(launcher, id)?;
        Ok(Healed::Adopted)
    } else {
        run::supervise(launcher.run.clone(), id).await?;
        Ok(Healed::Finished)
    }
}

/// Starts a supervisor for session `id`: the runner's supervisor program, detached, when it
/// has one, else a task of this runner. Either one takes the run only if nobody holds it.
pub(super) fn launch(launcher: &Launcher, id: SessionId) -> Result<()> {
    match &launcher.run.settings.supervisor {
        Some(command) => {
            let files = RunFiles::in_home(&launcher.run.records.home, &id);
            let mut args = command.args.clone();
            args.push(id.to_string().into());
            runner_process::detached::spawn_supervisor(
                &command.program,
                &args,
                files.root(),
                &files.supervisor_log(),
            )
        }
        None => {
            let task = tokio::spawn(run::supervise(launcher.run.clone(), id));
            launcher.keep(task.abort_handle());
            Ok(())
        }
    }
}
