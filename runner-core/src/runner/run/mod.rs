//! The supervisor of one turn: spawns the agent detached (or adopts one a supervisor that
//! went away left running), turns its output file into events appended to the log, runs the
//! watchdogs, and ends the turn with exactly one terminal event.
//!
//! One supervisor at a time, by `supervisor.lock`. Whoever takes a turn over replays the
//! agent's output from its first byte through a fresh parser: every event after the agent
//! started follows from that output alone (and the exit code, kept in `exit.json`), so the
//! events the log already holds are recomputed and skipped, and the rest are appended. No
//! event is lost and none is written twice.

mod end;
mod frames;
mod full_disk;
mod prepare;
mod repeat;
mod spawn;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::redact::Redactor;
use crate::runner::control::{RunFiles, SupervisorLock, TurnPlan};
use crate::runner::disk::{self, Appender};
use crate::runner::ending::{self, TurnEnd, append_with_room, ends_turn};
use crate::runner::log::{self, EventLog};
use crate::runner::parts::Supervision;
use crate::runner::watched::Watched;
use runner_contract::error::{Error, Result};
use runner_contract::event::{Event, EventBody, FailureKind, TaskFailed};
use runner_contract::ids::SessionId;
use runner_contract::sequence::EventSequence;
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::agent::{Agent, AgentRequest};
use runner_contract::traits::memory::RepoProfile;
use runner_process::tree;

/// How long a caller waits for a supervisor to act on a stop (beyond the stop grace), and for
/// a turn's end to reach the record once its last event is in the log.
pub(super) const SETTLE_WAIT: Duration = Duration::from_secs(15);

/// Why the read loop ended before the agent's output did.
enum Interruption {
    Stop,
    Idle,
    Linger,
    AuthFailed(String),
    /// The disk holding the run's files is full or read-only (`disk.rs`).
    DiskFull,
    /// The turn ran past its wall-clock limit (`TurnPlan::deadline_ms`).
    Timeout,
    /// The agent repeated itself (`repeat.rs`), with why.
    Repeating(String),
}

/// The terminal event an output line gave, held back until the agent has exited (so
/// `task.finished` carries the diff), with how long the agent may take to exit once its
/// stdin is closed (`None` while a conversation's agent still owes a result for input
/// it was given: its next result replaces this one).
struct Held {
    body: EventBody,
    raw: Option<String>,
    linger_until: Option<Instant>,
}

/// Supervises the current turn of session `id` to its end, unless another supervisor holds
/// the run (then it returns at once).
pub(super) async fn supervise(run: Supervision, id: SessionId) -> Result<()> {
    let home = run.records.home.root().to_owned();
    supervise_turn(run, id)
        .await
        .map_err(|e| disk::named(&home, e))
}

async fn supervise_turn(run: Supervision, id: SessionId) -> Result<()> {
    // Timed by `CODEHANDS_TIMING` (codehands::timing): a span closes when it is dropped.
    let step = tracing::trace_span!("turn.load");
    let files = RunFiles::in_home(&run.records.home, &id);
    let Some(lock) = SupervisorLock::try_acquire(&files)? else {
        return Ok(());
    };
    let record = run.records.store.get(&id)?;
    if record.state != SessionState::Running {
        return Ok(());
    }
    let Some(plan) = files.turn() else {
        drop(lock);
        return ending::fail_unplanned(&run, &record).await;
    };
    let scan = log::scan(&files.events(), plan.seq_start, |body| {
        ends_turn(body) || matches!(body, EventBody::TaskStarted(_))
    })?;
    let last_seq = scan.last_seq.max(record.last_seq);
    let mut log = EventLog::open(files.root(), &files.events())?;
    if scan.kept.iter().any(|e| ends_turn(&e.body)) {
        // The turn's end is in the log but did not reach the record: settle from the log.
        let mut ending = TurnEnd::from_log(&record, &plan, &scan.kept);
        return ending
            .settle(&run.records, &run.adapters, &files, &mut log)
            .await
            .map(drop);
    }
    let agent = match run
        .agents
        .get(crate::runner::requests::agent_of(&record, &plan))
    {
        Ok(agent) => agent,
        Err(e) => {
            let mut seq = EventSequence::continuing(id, last_seq);
            let failed = TaskFailed {
                reason: FailureKind::AgentUnavailable,
                message: e.to_string(),
                stderr: None,
                exit_code: None,
                cost_usd: None,
            };
            let events = [seq.next(EventBody::TaskFailed(failed.clone()), None)];
            append_with_room(&mut log, &files, &events)?;
            let mut ending = TurnEnd::new(&record, &plan);
            ending.failed = Some(failed.message);
            return ending
                .settle(&run.records, &run.adapters, &files, &mut log)
                .await
                .map(drop);
        }
    };
    let supervisor = Supervisor::new(run, record, agent, plan, files, log, last_seq);
    drop(step);
    supervisor.run(lock).await
}

/// One turn, from spawn (or adoption) to its terminal event.
struct Supervisor {
    run: Supervision,
    record: SessionRecord,
    agent: Arc<dyn Agent>,
    plan: TurnPlan,
    request: AgentRequest,
    seq: EventSequence,
    log: EventLog,
    /// Events made so far that are not yet in the log (written one line's worth at a time).
    pending: Vec<Event>,
    /// How many of the next events made from the agent's output the log already holds
    /// (from a supervisor that went away).
    skip: u64,
    /// The permission requests the log says are resolved (for a conversation taken over).
    resolved: std::collections::HashSet<String>,
    /// When the log says each permission request was made (a deadline runs from then).
    asked_at: std::collections::HashMap<String, String>,
    /// Whether the supervisor that went away had begun to end the turn (then it already ran
    /// the sandbox: its results are in the log).
    took_over_ending: bool,
    files: RunFiles,
    transcript: Option<Appender>,
    profile: RepoProfile,
    /// The first write that found the disk full or read-only: the turn ends as `disk_full`.
    full: Option<Error>,
    /// The folder whose disk was found full, when not the home's.
    full_at: Option<std::path::PathBuf>,
    /// Why the turn's end could not be written, if it could not.
    unsaid: Option<Error>,
    /// A supervisor before this one met a full disk (it used the turn's reserve up): an
    /// agent that ended without a result then ended for it.
    met_full_disk: bool,
    /// Cuts the secret values given to the agent (API keys, tokens), in every form, out
    /// of every line it prints, its stderr and this run's note.
    redactor: Redactor,
    /// The agent's actions so far, for the repeat guard.
    repeats: repeat::RepeatGuard,
}

impl Supervisor {
    fn new(
        run: Supervision,
        record: SessionRecord,
        agent: Arc<dyn Agent>,
        plan: TurnPlan,
        files: RunFiles,
        log: EventLog,
        last_seq: u64,
    ) -> Self {
        let request = crate::runner::requests::request_for(&record, &plan);
        Self {
            seq: EventSequence::continuing(record.session_id, last_seq),
            run,
            record,
            agent,
            plan,
            request,
            log,
            pending: Vec::new(),
            skip: 0,
            resolved: Default::default(),
            asked_at: Default::default(),
            took_over_ending: false,
            files,
            transcript: None,
            profile: RepoProfile::default(),
            full: None,
            full_at: None,
            unsaid: None,
            met_full_disk: false,
            redactor: Redactor::default(),
            repeats: Default::default(),
        }
    }

    /// Runs the turn to its end; an error when its end could not be written (a disk that
    /// stays full): the next command that looks at the session settles it.
    async fn run(mut self, lock: SupervisorLock) -> Result<()> {
        let recorded = self
            .files
            .agent_run()
            .filter(|run| run.turn == self.plan.turn);
        let watched = match recorded {
            Some(run) => {
                let found = run
                    .process
                    .or_else(|| tree::find_session_leader_in(&self.record.worktree_path));
                self.resume_after(run);
                match found {
                    Some(agent) => Some(Watched::Adopted {
                        agent,
                        relay: run.relay,
                        input_relay: run.input_relay,
                    }),
                    // Recorded as being spawned, and no such process: it never started.
                    None => {
                        // Its notes went to the log before it was recorded: not again.
                        let _ = self.prepare_request().await;
                        self.spawn(run.seq_before_agent).await
                    }
                }
            }
            None => {
                let step = tracing::trace_span!("turn.prepare");
                self.prepare().await;
                self.save_profile().await;
                drop(step);
                let seq_before_agent = self.seq.last_seq();
                let _step = tracing::trace_span!("turn.spawn");
                self.spawn(seq_before_agent).await
            }
        };
        // The version is asked while the agent works, so the turn waits for neither; once a
        // session, its first turn's answer stands for the rest.
        let probe = (watched.is_some() && self.files.agent_probed().is_none())
            .then(|| self.probe_version())
            .flatten();
        if let Some(watched) = watched {
            self.watch(watched).await;
        }
        // The turn has ended: the next one need not wait for the version, but this process
        // stays until it is recorded.
        drop(lock);
        if let Some(probe) = probe {
            let _ = probe.await;
        }
        match self.unsaid.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
