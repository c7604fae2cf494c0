//! The supervisor of one turn: spawns the agent detached (or adopts one a supervisor that
//! went away left running), turns its output file into events appended to the log, runs the
//! watchdogs, and ends the turn with exactly one terminal event.
//!
//! One supervisor at a time, by `supervisor.lock`. Whoever takes a turn over replays the
//! agent's output from its first byte through a fresh parser: every event after the agent
//! started follows from that output alone (and the exit code, kept in `exit.json`), so the
//! events the log already holds are recomputed and skipped, and the rest are appended. No
//! event is lost and none is written twice.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Shared;
use super::control::{AgentExit, AgentRun, RunFiles, SupervisorLock, TurnPlan};
use super::conversation::Conversation;
use super::disk::{self, Appender};
use super::ending::{self, TurnEnd, append_with_room, ends_turn};
use super::log::{self, EventLog};
use super::watched::{Backoff, Watched, human};
use crate::error::{Error, ErrorKind, Result};
use crate::event::{
    ApprovalRequested, Event, EventBody, FailureKind, Message, MessageRole, ProviderState,
    TaskFailed, TaskFinished, TaskStopped,
};
use crate::ids::SessionId;
use crate::process::detached::{AgentOutput, DetachedAgent};
use crate::process::framing::{DEFAULT_MAX_LINE, Frame, JsonlDecoder};
use crate::process::tree;
use crate::redact::Redactor;
use crate::sequence::EventSequence;
use crate::session::{SessionRecord, SessionState};
use crate::traits::agent::{Agent, AgentParser, AgentRequest, StdinClose};
use crate::traits::memory::{RepoProfile, RunSummary};
use crate::traits::sandbox::{BoxLimits, SandboxRequest};

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
pub(super) async fn supervise(shared: Arc<Shared>, id: SessionId) -> Result<()> {
    let home = shared.home.root().to_owned();
    supervise_turn(shared, id)
        .await
        .map_err(|e| disk::named(&home, e))
}

async fn supervise_turn(shared: Arc<Shared>, id: SessionId) -> Result<()> {
    // Timed by `CODEHANDS_TIMING` (codehands::timing): a span closes when it is dropped.
    let step = tracing::trace_span!("turn.load");
    let files = RunFiles::in_home(&shared.home, &id);
    let Some(lock) = SupervisorLock::try_acquire(&files)? else {
        return Ok(());
    };
    let record = shared.store.get(&id)?;
    if record.state != SessionState::Running {
        return Ok(());
    }
    let Some(plan) = files.turn() else {
        drop(lock);
        return ending::fail_unplanned(&shared, &record).await;
    };
    let scan = log::scan(&files.events(), plan.seq_start, |body| {
        ends_turn(body) || matches!(body, EventBody::TaskStarted(_))
    })?;
    let last_seq = scan.last_seq.max(record.last_seq);
    let mut log = EventLog::open(files.root(), &files.events())?;
    if scan.kept.iter().any(|e| ends_turn(&e.body)) {
        // The turn's end is in the log but did not reach the record: settle from the log.
        let mut ending = TurnEnd::from_log(&record, &plan, &scan.kept);
        return ending.settle(&shared, &files, &mut log).await.map(drop);
    }
    let agent = match shared.agents.get(super::agent_of(&record, &plan)) {
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
            return ending.settle(&shared, &files, &mut log).await.map(drop);
        }
    };
    let supervisor = Supervisor::new(shared, record, agent, plan, files, log, last_seq);
    drop(step);
    supervisor.run(lock).await
}

/// One turn, from spawn (or adoption) to its terminal event.
struct Supervisor {
    shared: Arc<Shared>,
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
}

impl Supervisor {
    fn new(
        shared: Arc<Shared>,
        record: SessionRecord,
        agent: Arc<dyn Agent>,
        plan: TurnPlan,
        files: RunFiles,
        log: EventLog,
        last_seq: u64,
    ) -> Self {
        let request = super::request_for(&record, &plan);
        Self {
            seq: EventSequence::continuing(record.session_id, last_seq),
            shared,
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

    /// Asks the agent's program for its version in the background and records it as soon
    /// as it answers (the report says what ran from it); `None` for an agent that cannot say.
    /// It runs outside the box, as the caller: with the allowlist of the agent's environment
    /// only, in an empty folder of the run's own that the box never sees, which is also its
    /// HOME and TMPDIR when the session is boxed (`process/probe.rs`).
    fn probe_version(&self) -> Option<tokio::task::JoinHandle<()>> {
        use crate::process::probe;
        let asked = self.agent.version_probe()?;
        let files = self.files.clone();
        let session = self.record.session_id;
        let caller = self.shared.settings.caller_env.clone();
        let boxed = self.record.isolation != crate::options::Isolation::None;
        let cache = self.shared.home.versions_dir();
        Some(tokio::spawn(async move {
            let version = match probe::NeutralDir::make_in(files.dir()) {
                Ok(dir) => {
                    let env = if boxed {
                        probe::probe_env_in(caller, dir.path())
                    } else {
                        probe::probe_env(caller, &[])
                    };
                    probe::ask_cached(&cache, &asked, &env, dir.path(), Duration::from_secs(10))
                        .await
                }
                Err(e) => {
                    tracing::warn!(session = %session, "cannot ask the agent's version: {e}");
                    None
                }
            };
            let probed = super::control::AgentProbed {
                program: asked.program.display().to_string(),
                version,
            };
            if let Err(e) = files.set_agent_probed(&probed) {
                tracing::warn!(session = %session, "cannot record the agent's version: {e}");
            }
        }))
    }

    /// Takes over a turn whose agent a supervisor that went away started: the log holds
    /// every event up to its last seq, and the agent's output is read again from its start.
    fn resume_after(&mut self, run: AgentRun) {
        // What callers' answers added (`permission.resolved`) is not made again from the
        // output: it is not among the events to skip.
        let files = self.files.clone();
        let mut made_from_output = 0;
        let resolved = &mut self.resolved;
        let scan = log::scan(&files.events(), run.seq_before_agent, |body| {
            if let EventBody::PermissionResolved(r) = body {
                resolved.insert(r.request_id.clone());
            } else {
                made_from_output += 1;
            }
            matches!(body, EventBody::PermissionRequested(_))
        });
        match scan {
            Ok(scan) => {
                for event in scan.kept {
                    if let EventBody::PermissionRequested(asked) = event.body {
                        self.asked_at.insert(asked.request_id, event.ts);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(session = %self.record.session_id, "cannot read the event log: {e}")
            }
        }
        self.skip = made_from_output;
        self.met_full_disk = !self.files.has_reserve();
        self.redactor = Redactor::new(self.files.secrets());
        // The notes as the agent was given them (a parser may owe lines holding them).
        let notes = self.files.dir().join(super::notes::NOTES_FILE);
        if let Ok(Some(bytes)) = self.files.root().read(&notes) {
            self.request.notes = Some(String::from_utf8_lossy(&bytes).into_owned());
            self.request.notes_file = Some(notes);
        }
        self.profile = self
            .shared
            .memory
            .detect_profile(&self.record.worktree_path);
        self.open_transcript(Some(run.transcript_start));
    }

    /// Reads the repo's notes and profile into the request, and opens the transcript; a
    /// memory error never fails a run: it becomes a note.
    async fn prepare(&mut self) {
        if let Some(phase) = self.plan.phase.clone() {
            // The turn's first event says which phase it runs (`workflow/`).
            let started = EventBody::PhaseStarted(crate::event::PhaseStarted {
                name: phase.name,
                kind: phase.kind,
                agent: phase.agent,
                model: phase.model,
                read_only: phase.read_only,
                round: phase.round,
            });
            self.emit_own(started, None);
            if phase.read_only {
                // What the worktree holds before the agent runs: the workflow's driver
                // compares it once the turn ends (`fingerprint.rs`).
                let (worktree, turn) = (self.record.worktree_path.clone(), self.plan.turn);
                if let Err(e) = super::fingerprint::keep_before(&self.files, &worktree, turn).await
                {
                    self.note(format!("cannot keep the worktree's fingerprint: {e}"));
                }
            }
        }
        for note in self.prepare_request().await {
            self.note(note);
        }
        self.open_transcript(None);
        self.flush_events();
    }

    /// Fills what the agent is given from the repo's memory; returns the notes to tell.
    async fn prepare_request(&mut self) -> Vec<String> {
        let mut notes_to_tell = Vec::new();
        let memory = self.shared.memory.clone();
        let key = self.record.repo_key.clone();
        self.profile = memory.detect_profile(&self.record.worktree_path);
        match memory.notes_for_prompt(&key).await {
            Ok(notes) if !notes.trim().is_empty() => {
                let framed = super::notes::frame(&notes);
                match self
                    .files
                    .write_private(super::notes::NOTES_FILE, framed.as_bytes())
                {
                    Ok(path) => {
                        self.request.notes = Some(framed);
                        self.request.notes_file = Some(path);
                    }
                    Err(e) => {
                        self.forget_notes();
                        notes_to_tell.push(format!(
                            "repo memory: cannot write the notes for the agent ({e}); it runs without them"
                        ));
                    }
                }
            }
            Ok(_) => self.forget_notes(),
            Err(e) => {
                self.forget_notes();
                notes_to_tell.push(format!("repo memory: cannot read the notes: {e}"));
            }
        }
        self.request.test_command = self.profile.test_command.clone();
        self.request.provider_env = self
            .agent
            .provider_env()
            .into_iter()
            .filter_map(|name| {
                let value = self
                    .shared
                    .settings
                    .caller_env
                    .iter()
                    .find(|(k, _)| *k == name)?;
                Some(value.clone())
            })
            .collect();
        notes_to_tell
    }

    /// Removes an earlier turn's notes file: a supervisor taking this turn over reads the
    /// file as the notes this turn's agent was given.
    fn forget_notes(&self) {
        let _ = std::fs::remove_file(self.files.dir().join(super::notes::NOTES_FILE));
    }

    /// Opens the transcript for appending; when a turn is taken over, first cut it back to
    /// where the turn began, since the turn's lines are written again.
    fn open_transcript(&mut self, cut_to: Option<u64>) {
        match self.files.open_transcript() {
            Ok(mut out) => {
                if let Some(len) = cut_to {
                    let _ = out.cut_to(len);
                }
                self.transcript = Some(out);
            }
            Err(e) => {
                self.saw(&e);
                self.note(format!("cannot open the transcript: {e}"));
            }
        }
    }

    /// Saves the repo profile when it changed; before the spawn, so that every event after
    /// the agent starts follows from its output alone.
    async fn save_profile(&mut self) {
        let memory = self.shared.memory.clone();
        let key = self.record.repo_key.clone();
        if matches!(memory.profile(&key).await, Ok(Some(saved)) if saved == self.profile) {
            return;
        }
        if let Err(e) = memory.save_profile(&key, &self.profile).await {
            self.note(format!("repo memory: cannot save the profile: {e}"));
            self.flush_events();
        }
    }

    /// Starts the agent, recording it first as being spawned and then with its pid; a stop
    /// asked for before it started ends the turn without it.
    async fn spawn(&mut self, seq_before_agent: u64) -> Option<Watched> {
        if self.full.is_some() {
            // What the turn wrote before the agent did not fit: it does not start.
            self.fail_disk_full(None, None).await;
            return None;
        }
        if self.files.stop_requested() {
            self.emit(
                EventBody::TaskStopped(TaskStopped {
                    reason: Some("stopped before the agent started".into()),
                }),
                None,
            );
            self.end(None).await;
            return None;
        }
        match self.try_spawn(seq_before_agent).await {
            Ok(agent) => Some(Watched::Child(Box::new(agent))),
            Err(e) if disk::is_full(&e) => {
                self.saw(&e);
                self.fail_disk_full(None, None).await;
                None
            }
            Err(e) => {
                let reason = if e.kind() == ErrorKind::InvalidInput {
                    FailureKind::InvalidInput
                } else {
                    FailureKind::AgentUnavailable
                };
                self.fail(reason, e.to_string(), None, None, None).await;
                None
            }
        }
    }

    async fn try_spawn(&mut self, seq_before_agent: u64) -> Result<DetachedAgent> {
        let invocation = self.agent.invocation(&self.request)?;
        let env = crate::process::env::agent_env(
            self.shared.settings.caller_env.iter().cloned(),
            &self.agent.provider_env(),
            &self.shared.settings.extra_env,
            &invocation.env,
        );
        let step = tracing::trace_span!("turn.confine");
        let invocation = self.confined(invocation, &env).await?;
        drop(step);
        let secrets = secret_values(&env, &self.agent.secret_envs());
        self.files.set_secrets(&secrets)?;
        self.redactor = Redactor::new(secrets);
        let transcript_start = self.transcript.as_ref().map_or(0, Appender::len);
        let mut run = AgentRun {
            turn: self.plan.turn,
            process: None,
            relay: None,
            input_relay: None,
            seq_before_agent,
            transcript_start,
        };
        self.files.set_agent_run(&run)?;
        let (stdout, stderr) = (
            self.files.agent_stdout(self.plan.turn),
            self.files.agent_stderr(self.plan.turn),
        );
        let stdin = super::inbox::input_file(&self.files, self.plan.turn);
        let output = AgentOutput {
            root: self.files.root(),
            stdout: &stdout,
            stderr: &stderr,
            stdin: &stdin,
        };
        let step = tracing::trace_span!("turn.exec");
        let mut agent =
            DetachedAgent::spawn(&invocation, &self.record.worktree_path, &env, &output)?;
        drop(step);
        run.process = Some(agent.identity());
        run.relay = agent.relay_identity();
        run.input_relay = agent.input_relay_identity();
        if let Err(e) = self.files.set_agent_run(&run) {
            // Without the record no other process could stop or adopt it: do not run it.
            let grace = self.shared.settings.stop_grace;
            agent.end_tree(grace).await;
            agent.close_stdin();
            return Err(e);
        }
        if invocation.close_stdin == StdinClose::AfterWrite {
            agent.close_stdin();
        }
        Ok(agent)
    }

    /// The invocation in the session's box when its isolation is `box` (the program spawned,
    /// recorded, stopped and adopted is then the box's outer process), else as it is.
    async fn confined(
        &self,
        invocation: crate::Invocation,
        env: &[(String, String)],
    ) -> Result<crate::Invocation> {
        if self.record.isolation == crate::options::Isolation::None {
            return Ok(invocation);
        }
        super::preflight::isolation(&self.shared, self.record.isolation, self.record.engine)?;
        let Some(confinement) = &self.shared.confinement else {
            unreachable!("preflight::isolation refuses a box without a confinement");
        };
        let git = self
            .shared
            .vcs
            .git_dirs(&self.record.worktree_spec())
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(session = %self.record.session_id, "the box has no git folders: {e}");
                None
            });
        // What the person's settings add (`Allowances::box_read`) is read-only, as the
        // agent's own needs are.
        let mut needs = self.agent.box_needs();
        needs
            .read_only
            .extend(self.record.allowances.box_read.iter().cloned());
        confinement.wrap(&crate::ConfineRequest {
            session_id: &self.record.session_id,
            run_dir: self.files.dir(),
            worktree: &self.record.worktree_path,
            invocation: &invocation,
            env,
            needs: &needs,
            files: &self.request.notes_file.iter().cloned().collect::<Vec<_>>(),
            git,
            engine: self.record.engine,
        })
    }

    /// Reads the agent's output file as it grows until the agent has exited and every byte
    /// is read (or a watchdog, a stop or an auth failure ends it), then ends the turn.
    async fn watch(&mut self, mut watched: Watched) {
        // The same request on a takeover (`resume_after`), so a replaying parser owes the
        // same lines, which the input file holds already.
        let mut parser = self.agent.parser_for(&self.request);
        let mut conversation = watched.converses().then(|| {
            Conversation::new(
                self.agent.clone(),
                self.files.clone(),
                self.plan.turn,
                self.record.permissions,
                std::mem::take(&mut self.resolved),
                std::mem::take(&mut self.asked_at),
            )
        });
        let watchdog = self.shared.settings.watchdog;
        let stdout_path = self.files.agent_stdout(self.plan.turn);
        let mut stdout = match crate::private::open_no_follow(
            &stdout_path,
            std::fs::OpenOptions::new().read(true),
        ) {
            Ok(file) => Some(file),
            Err(e) => {
                self.note(format!("cannot read the agent's output: {e}"));
                None
            }
        };
        let mut decoder = JsonlDecoder::with_max_line(DEFAULT_MAX_LINE);
        let mut frames = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut held: Option<Held> = None;
        let mut interruption = None;
        let mut idle_until = Instant::now() + watchdog.idle;
        let mut pause = Backoff::new();
        let mut exit: Option<Option<i32>> = None;
        // The agent's time as the supervisor sees it: from here to its exit and last byte.
        let agent_span = tracing::trace_span!("turn.agent");
        let mut first_output = Some(tracing::trace_span!("turn.first_output"));
        loop {
            if self.full.is_some() {
                interruption.get_or_insert(Interruption::DiskFull);
                break;
            }
            let n = match stdout.as_mut().map(|f| f.read(&mut chunk)) {
                Some(Ok(n)) => n,
                Some(Err(_)) | None => 0,
            };
            if n > 0 {
                drop(first_output.take());
                decoder.push(&chunk[..n], &mut frames);
                for frame in frames.drain(..) {
                    self.on_frame(
                        frame,
                        &mut *parser,
                        &mut held,
                        &mut interruption,
                        &mut watched,
                        conversation.as_mut(),
                    );
                }
                self.flush_events();
                idle_until = Instant::now() + watchdog.idle;
                pause.reset();
                if self.full.is_some() {
                    interruption.get_or_insert(Interruption::DiskFull);
                }
                if interruption.is_some() {
                    break;
                }
                continue;
            }
            if let Some(code) = exit {
                // Exited, and everything it wrote before is read: the unterminated last line
                // too, unless its output could not all be written (that line is cut short).
                let mut unterminated = Vec::new();
                decoder.finish(&mut unterminated);
                if watched.output_failed() {
                    self.output_lost(&stdout_path, !unterminated.is_empty());
                } else if self.met_full_disk && !unterminated.is_empty() {
                    self.note(cut_short(&stdout_path));
                } else {
                    frames.append(&mut unterminated);
                }
                for frame in frames.drain(..) {
                    self.on_frame(
                        frame,
                        &mut *parser,
                        &mut held,
                        &mut interruption,
                        &mut watched,
                        conversation.as_mut(),
                    );
                }
                self.flush_events();
                exit = Some(code);
                break;
            }
            if let Some(code) = watched.exited() {
                // One more read: what it wrote just before exiting.
                exit = Some(code);
                continue;
            }
            if self.files.stop_requested() {
                interruption = Some(Interruption::Stop);
                break;
            }
            if let Some(conversation) = conversation.as_mut() {
                let (events, notes) = conversation.poll();
                let new = !events.is_empty() || !notes.is_empty();
                for body in events {
                    self.emit_own(body, None);
                }
                for note in notes {
                    self.emit_own(system_note(note), None);
                }
                if new {
                    self.flush_events();
                }
                if conversation.waiting() {
                    // Waiting for an answer is not idling: its own deadline ends it.
                    idle_until = Instant::now() + watchdog.idle;
                }
            }
            let now = Instant::now();
            if now >= idle_until {
                interruption = Some(Interruption::Idle);
                break;
            }
            if held
                .as_ref()
                .is_some_and(|h| h.linger_until.is_some_and(|t| now >= t))
            {
                interruption = Some(Interruption::Linger);
                break;
            }
            pause.wait().await;
        }
        drop(agent_span);
        let _step = tracing::trace_span!("turn.end");
        let grace = self.shared.settings.stop_grace;
        if interruption.is_some() {
            watched.end_tree(grace).await;
        }
        let exit = match exit {
            Some(code) => Some(code),
            None => watched.wait_exit(watchdog.linger).await,
        };
        let exit = match exit {
            Some(code) => code,
            None => {
                interruption.get_or_insert(Interruption::Linger);
                watched.end_tree(grace).await;
                None
            }
        };
        // Children the agent left behind die with the run, and so does a relay feeding it.
        if tree::group_alive(watched.identity().pid) {
            watched.end_tree(grace).await;
        }
        watched.close_stdin();
        let exit_code = self.exit_code(&watched, exit);
        for body in parser.finish(exit_code) {
            if !body.is_terminal() {
                self.emit(body, None);
            } else if held.is_none() {
                // An agent with no result line of its own ends the run at its exit.
                held = Some(Held {
                    body,
                    raw: None,
                    linger_until: Some(Instant::now()),
                });
            }
        }
        self.flush_events();
        let stderr = self.redactor.redact_string(self.stderr_tail());
        if self.files.stop_requested() && !matches!(interruption, Some(Interruption::Stop)) {
            interruption = Some(Interruption::Stop);
        }
        let interrupted = conversation.as_ref().is_some_and(|c| c.interrupted);
        let remote = self.record.engine != crate::options::Engine::Local;
        let held = held.map(|h| {
            if interrupted {
                ended_by_interrupt(h)
            } else if remote && exit_code == Some(runner_contract::REMOTE_BOX_FAILED_EXIT) {
                refused_by_the_box(h, exit_code, &stderr)
            } else {
                h
            }
        });
        self.conclude(interruption, held, exit_code, stderr).await;
    }

    /// The exit code: from our own child, else as its parent recorded it (`None` when the
    /// agent ended while no supervisor was its parent).
    fn exit_code(&mut self, watched: &Watched, seen: Option<i32>) -> Option<i32> {
        match watched {
            Watched::Child(_) => {
                let exit = AgentExit {
                    turn: self.plan.turn,
                    code: seen,
                };
                if let Err(e) = self.files.set_exit(&exit) {
                    tracing::warn!(session = %self.record.session_id, "cannot record the agent's exit: {e}");
                    self.saw(&e);
                }
                seen
            }
            Watched::Adopted { .. } => self
                .files
                .exit()
                .filter(|e| e.turn == self.plan.turn)
                .and_then(|e| e.code),
        }
    }

    /// One framed output line: redacted, kept in the transcript, parsed into events.
    fn on_frame(
        &mut self,
        frame: Frame,
        parser: &mut dyn AgentParser,
        held: &mut Option<Held>,
        interruption: &mut Option<Interruption>,
        watched: &mut Watched,
        mut conversation: Option<&mut Conversation>,
    ) {
        let text = match frame {
            Frame::Line(text) | Frame::NotUtf8(text) => strip_cr(text),
            Frame::TooLong { bytes } => {
                self.note(format!(
                    "the agent printed a line of {bytes} bytes, over the limit; it was skipped"
                ));
                return;
            }
        };
        if text.is_empty() {
            return;
        }
        // The agent may print its own key (a test script dumping its environment), escaped,
        // encoded or cut short: cut here, before the line is decoded, it never reaches the
        // transcript, an event's payload or its raw line.
        let text = self.redactor.redact_string(text);
        if let Some(out) = &mut self.transcript {
            let mut line = Vec::with_capacity(text.len() + 1);
            line.extend_from_slice(text.as_bytes());
            line.push(b'\n');
            if let Err(e) = out.append(&line) {
                self.transcript = None;
                self.saw(&e);
            }
        }
        let bodies = parser.parse_line(&text);
        self.give_owed(parser, conversation.is_some());
        for body in bodies {
            if let Some(why) = self.auth_failure(&body) {
                interruption.get_or_insert(Interruption::AuthFailed(why));
            }
            if !body.is_terminal() {
                let more = conversation
                    .as_deref_mut()
                    .map(|c| c.see(&body))
                    .unwrap_or_default();
                let hidden = self.hidden_by_box(&body);
                self.emit(body, Some(text.clone()));
                if let Some(hidden) = hidden {
                    // Made from the same line, so a replay after a takeover skips it too.
                    self.emit(EventBody::BoxHidden(hidden), None);
                }
                for body in more {
                    self.emit_own(body, None);
                }
                continue;
            }
            // The first result is the turn's; in a conversation, a result given while input
            // was still owed is followed by another, which replaces it.
            if held.as_ref().is_some_and(|h| h.linger_until.is_some()) {
                continue;
            }
            let settled = conversation.as_deref().is_none_or(Conversation::settled);
            let linger = Instant::now() + self.shared.settings.watchdog.linger;
            *held = Some(Held {
                body,
                raw: Some(text.clone()),
                linger_until: settled.then_some(linger),
            });
            if settled {
                let withdrawn = conversation.as_deref_mut().map(Conversation::close);
                for body in withdrawn.unwrap_or_default() {
                    self.emit_own(body, None);
                }
                watched.close_stdin();
            }
        }
    }

    /// Appends the lines the parser owes the agent to the turn's input file, each unless the
    /// file holds it already (a replay owes what was given before the takeover). Only a
    /// conversation's stdin reads the file; another agent's owed lines are dropped.
    fn give_owed(&mut self, parser: &mut dyn AgentParser, converses: bool) {
        for line in parser.owed_input() {
            if !converses {
                continue;
            }
            if let Err(e) = super::inbox::deliver(&self.files, self.plan.turn, &line) {
                let note = format!("cannot give the agent what its protocol expects next: {e}");
                self.emit_own(system_note(note), None);
            }
        }
    }

    /// The end of what the agent wrote to stderr.
    fn stderr_tail(&self) -> String {
        let path = self.files.agent_stderr(self.plan.turn);
        let Ok(mut file) =
            crate::private::open_no_follow(&path, std::fs::OpenOptions::new().read(true))
        else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let start = len.saturating_sub(crate::process::STDERR_TAIL as u64);
        let mut tail = Vec::new();
        use std::io::Seek;
        if file.seek(std::io::SeekFrom::Start(start)).is_err()
            || file.read_to_end(&mut tail).is_err()
        {
            return String::new();
        }
        String::from_utf8_lossy(&tail).into_owned()
    }

    /// The run's end: exactly one terminal event, and the state to match.
    async fn conclude(
        &mut self,
        interruption: Option<Interruption>,
        held: Option<Held>,
        exit_code: Option<i32>,
        stderr: String,
    ) {
        // What the agent said on stderr about failing at its work (its own sandbox cannot
        // start, say), in its words: notes before the turn's end, which would otherwise
        // look like a clean run. Before the skip below: a replay recomputes them.
        for warning in self.agent.stderr_warnings(&stderr) {
            let text = self.redactor.redact(&warning).into_owned();
            self.note(format!("warning from the agent: {text}"));
        }
        let stderr = (!stderr.trim().is_empty()).then_some(stderr);
        let watchdog = self.shared.settings.watchdog;
        if self.skip > 0 {
            // The supervisor that went away had begun to end the turn (what it said then
            // depends on more than the agent's output): go on after its last event.
            self.took_over_ending = true;
            self.skip = 0;
        }
        // Before the turn is said to be over: no `.git` of the agent's is left for the
        // person's git to enter (`nested_git.rs`).
        let turn = self.plan.turn;
        let nested = super::nested_git::take_out(&self.shared, &self.record, &self.files, turn);
        if let Some(text) = nested.await {
            self.note(text);
        }
        if interruption.is_none() && self.full.is_none() && held.is_none() {
            // An agent whose own writes failed for a full disk (its edits, its output) may
            // die without a result: the disk is the reason then, not the agent.
            self.disk_looks_full();
        }
        let interruption = if self.full.is_some() {
            Some(Interruption::DiskFull)
        } else {
            interruption
        };
        match (interruption, held.map(|h| (h.body, h.raw))) {
            (Some(Interruption::DiskFull), held) => {
                let cost = held.and_then(|(body, _)| match body {
                    EventBody::TaskFinished(f) => f.cost_usd,
                    EventBody::TaskFailed(f) => f.cost_usd,
                    _ => None,
                });
                self.fail_disk_full_costing(stderr, exit_code, cost).await;
            }
            (Some(Interruption::Stop), _) => self.stopped().await,
            (Some(Interruption::AuthFailed(why)), _) => {
                self.fail(FailureKind::AuthFailed, why, stderr, exit_code, None)
                    .await;
            }
            (Some(Interruption::Idle), _) => {
                let message = format!(
                    "the agent printed nothing for {}; the watchdog (idle) ended its process tree",
                    human(watchdog.idle)
                );
                self.fail(FailureKind::Idle, message, stderr, exit_code, None)
                    .await;
            }
            (Some(Interruption::Linger), _) => {
                let message = format!(
                    "the agent did not exit within {} of its result; the watchdog (linger) ended its process tree",
                    human(watchdog.linger)
                );
                self.fail(FailureKind::Linger, message, stderr, exit_code, None)
                    .await;
            }
            (None, Some((EventBody::TaskFinished(finished), raw))) => {
                self.finished(finished, raw).await
            }
            (None, Some((EventBody::TaskFailed(mut failed), raw))) => {
                failed.stderr = failed.stderr.or(stderr);
                failed.exit_code = failed.exit_code.or(exit_code);
                self.fail_with(failed, raw).await;
            }
            (None, _) => {
                let code =
                    exit_code.map_or("no exit code".to_owned(), |c| format!("exit code {c}"));
                // An agent that cannot write its output on a full disk dies without a
                // result: then the disk is the cause to name, not its install.
                let message = if disk::looks_full(self.files.dir()) {
                    disk::full_message(
                        self.files.dir(),
                        &format!("the agent exited without a result, {code}"),
                        "run `codehands recover`",
                    )
                } else {
                    format!(
                        "the agent exited without a result ({code}): check that it is installed, on PATH and logged in; stderr says more"
                    )
                };
                self.fail(FailureKind::NoResult, message, stderr, exit_code, None)
                    .await;
            }
        }
    }

    async fn finished(&mut self, mut finished: TaskFinished, raw: Option<String>) {
        let step = tracing::trace_span!("turn.diff");
        let diff = match self.shared.vcs.diff(&self.record.worktree_spec()).await {
            Ok(diff) => diff,
            Err(e) => {
                let message = format!("the agent finished but its change could not be read: {e}");
                return self
                    .fail(FailureKind::Vcs, message, None, None, finished.cost_usd)
                    .await;
            }
        };
        if self.plan.verify && !self.took_over_ending {
            self.verify_in_sandbox().await;
        }
        let summary = RunSummary {
            session_id: self.record.session_id,
            prompt: self.redactor.redact_string(self.request.prompt.clone()),
            branch: self.record.branch.clone(),
            result: finished
                .result
                .as_deref()
                .map(|r| self.redactor.redact_string(r.to_owned())),
            diff_stat: diff.stat.clone(),
            finished_at: crate::now_rfc3339(),
        };
        if let Err(e) = self
            .shared
            .memory
            .record_run(&self.record.repo_key, &summary)
            .await
        {
            self.note(format!("repo memory: cannot add this run's note: {e}"));
        }
        drop(step);
        finished.diff_stat = Some(diff.stat.clone());
        self.emit(EventBody::TaskFinished(finished), raw);
        // A workflow's phase asks for no approval: its driver does, once the last phase
        // passed (`workflow/`).
        if self.plan.phase.is_none() {
            self.emit(
                EventBody::ApprovalRequested(ApprovalRequested {
                    branch: self.record.branch.clone(),
                    diff_stat: diff.stat,
                }),
                None,
            );
        }
        self.end(None).await;
    }

    async fn verify_in_sandbox(&mut self) {
        let Some(sandbox) = self.shared.sandbox.clone() else {
            return;
        };
        let request = SandboxRequest {
            session_id: self.record.session_id,
            worktree: self.record.worktree_path.clone(),
            profile: self.profile.clone(),
            test_command: None,
            image: None,
            timezone: None,
            limits: BoxLimits::default(),
        };
        let result = sandbox.run_tests(&request).await;
        if let Some(error) = &result.error {
            self.note(format!("sandbox: {}", error.message));
        }
        // The verify gate (verify.rs): approve reads this verdict, from any process.
        if let Err(e) =
            super::verify::Verdict::of(&result).save(&self.shared.home, &self.record.session_id)
        {
            self.note(format!("sandbox: cannot keep the verdict: {e}"));
        }
        let body = super::verify::test_result(&result);
        self.emit(body, None);
        self.flush_events();
    }

    /// Ends the turn as `disk_full`: the agent's tree is gone by now; the message names the
    /// disk and what it has left (measured before the reserve gives its room back).
    async fn fail_disk_full(&mut self, stderr: Option<String>, exit_code: Option<i32>) {
        self.fail_disk_full_costing(stderr, exit_code, None).await;
    }

    async fn fail_disk_full_costing(
        &mut self,
        stderr: Option<String>,
        exit_code: Option<i32>,
        cost_usd: Option<f64>,
    ) {
        let message = self.full_error().message().to_owned();
        self.files.release_reserve();
        self.fail(FailureKind::DiskFull, message, stderr, exit_code, cost_usd)
            .await;
    }

    /// The error of the full disk met: which disk, what it has left, what to do.
    fn full_error(&self) -> Error {
        let detail = self.full.as_ref().map_or("", |e| e.message());
        let at = self.full_at.as_deref().unwrap_or(self.shared.home.root());
        disk::full(at, detail, "run `codehands recover`")
    }

    /// Notes a failed write: one that found the disk full or read-only ends the turn.
    fn saw(&mut self, error: &Error) {
        if disk::is_full(error) && self.full.is_none() {
            tracing::error!(session = %self.record.session_id, "{error}");
            self.full = Some(error.clone());
        }
    }

    /// The agent's output could not all be written (the relay carrying it to its file
    /// failed): on a full disk that is the turn's end.
    fn output_lost(&mut self, stdout: &std::path::Path, cut: bool) {
        if self.full.is_none() && disk::looks_full(stdout) {
            let detail = format!(
                "the agent's output could not be written to {}",
                stdout.display()
            );
            self.full = Some(Error::new(ErrorKind::DiskFull, detail));
        } else if cut {
            self.note(cut_short(stdout));
        }
    }

    /// Whether the disk of the run's files or of the worktree has (almost) no room left:
    /// then an agent that ended without a result most likely ended for it.
    fn disk_looks_full(&mut self) {
        if self.met_full_disk {
            self.full = Some(Error::new(
                ErrorKind::DiskFull,
                "the disk was full while the turn ran (its reserve is used up), and the agent ended without a result",
            ));
            return;
        }
        for path in [
            self.files.dir().to_owned(),
            self.record.worktree_path.clone(),
        ] {
            if disk::looks_full(&path) {
                self.full = Some(Error::new(
                    ErrorKind::DiskFull,
                    "the agent ended without a result while the disk had no room left",
                ));
                self.full_at = Some(path);
                return;
            }
        }
    }

    async fn stopped(&mut self) {
        self.emit(EventBody::TaskStopped(TaskStopped::default()), None);
        self.end(None).await;
    }

    async fn fail(
        &mut self,
        reason: FailureKind,
        message: String,
        stderr: Option<String>,
        exit_code: Option<i32>,
        cost_usd: Option<f64>,
    ) {
        self.fail_with(
            TaskFailed {
                reason,
                message,
                stderr,
                exit_code,
                cost_usd,
            },
            None,
        )
        .await;
    }

    async fn fail_with(&mut self, failed: TaskFailed, raw: Option<String>) {
        let message = failed.message.clone();
        self.emit(EventBody::TaskFailed(failed), raw);
        self.end(Some(message)).await;
    }

    /// Writes the turn's last events, then settles the record from them. On a full disk
    /// they are written in the room the turn's reserve leaves; a `task.failed` that still
    /// does not fit is written alone (the events before it that did not fit are dropped,
    /// seq going on from the log's last); when nothing fits the turn's end stays unsaid
    /// ([`Supervisor::run`] says why) and the next command settles it.
    async fn end(&mut self, failure: Option<String>) {
        self.flush_events();
        // A box ended by a stop's or a watchdog's SIGKILL could not clean up after itself.
        if let Some(confinement) = &self.shared.confinement
            && self.record.isolation == crate::options::Isolation::Box
        {
            confinement.cleanup(self.files.dir());
        }
        if !self.pending.is_empty() && self.files.release_reserve() {
            self.flush_events();
        }
        if self.pending.len() > 1
            && matches!(
                self.pending.last().map(|e| &e.body),
                Some(EventBody::TaskFailed(_))
            )
            && let Some(last) = self.pending.pop()
        {
            let written = self.seq.last_seq() - self.pending.len() as u64 - 1;
            self.pending.clear();
            self.seq = EventSequence::continuing(self.record.session_id, written);
            self.emit_own(last.body, last.raw);
            self.flush_events();
        }
        if !self.pending.is_empty() {
            let error = match self.full {
                Some(_) => self.full_error(),
                None => {
                    Error::internal("the end of the turn could not be written to the event log")
                }
            };
            tracing::error!(session = %self.record.session_id, "cannot write the end of the run: {error}");
            self.unsaid = Some(error);
            return;
        }
        let mut ending = TurnEnd::new(&self.record, &self.plan);
        ending.failed = failure;
        ending.agent_session_id = self.record.agent_session_id.clone();
        let (shared, files) = (self.shared.clone(), self.files.clone());
        if let Err(e) = ending.settle(&shared, &files, &mut self.log).await {
            tracing::error!(session = %self.record.session_id, "cannot save the end of the run: {e}");
            self.unsaid = Some(e);
        }
    }

    fn auth_failure(&mut self, body: &EventBody) -> Option<String> {
        match body {
            EventBody::TaskStarted(started) => {
                if let Some(id) = &started.agent_session_id {
                    self.record.agent_session_id = Some(id.clone());
                }
                None
            }
            EventBody::ProviderStatus(status)
                if status.status == ProviderState::AuthExpired
                    && self.shared.settings.fail_fast_on_auth =>
            {
                Some(format!(
                    "the provider refused the credentials ({}): log in again or check the API key, then start a new session",
                    status.message
                ))
            }
            _ => None,
        }
    }

    /// The `box.hidden` warning a boxed turn's failed command calls for ([`super::hidden`]).
    fn hidden_by_box(&self, body: &EventBody) -> Option<crate::event::BoxHidden> {
        let EventBody::CommandFinished(finished) = body else {
            return None;
        };
        // On a remote engine the caller's PATH is not the box's to have.
        if self.record.isolation != crate::options::Isolation::Box || !self.record.engine.is_local()
        {
            return None;
        }
        let path = self
            .shared
            .settings
            .caller_env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        let home = self
            .shared
            .settings
            .caller_env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| std::path::Path::new(v.as_str()));
        super::hidden::hidden_program(finished, path, home)
    }

    fn note(&mut self, text: String) {
        self.emit(system_note(text), None);
    }

    /// Numbers an event; it goes to the log with the next flush, unless the log already
    /// holds it (from a supervisor that went away).
    fn emit(&mut self, body: EventBody, raw: Option<String>) {
        if self.skip > 0 {
            self.skip -= 1;
        } else {
            self.emit_own(body, raw);
        }
    }

    /// Numbers an event that does not follow from the agent's output (what callers' input
    /// made): a replay never makes it again, so it is never skipped.
    fn emit_own(&mut self, body: EventBody, raw: Option<String>) {
        let body = self.normalise(body);
        let event = self.seq.next(body, raw);
        self.pending.push(event);
    }

    /// Appends the events made since the last flush, in one write. On a full disk they are
    /// kept for the turn's end to try again (none is numbered twice).
    fn flush_events(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        match self.log.append(&self.pending) {
            Ok(()) => self.pending.clear(),
            Err(e) if disk::is_full(&e) => self.saw(&e),
            Err(e) => {
                tracing::error!(session = %self.record.session_id, "cannot append to the event log: {e}");
                self.pending.clear();
            }
        }
    }

    /// What only the runner knows: whether this run is a resume, and the worktree
    /// (file paths are reported relative to it, whatever form the agent used).
    fn normalise(&self, mut body: EventBody) -> EventBody {
        match &mut body {
            EventBody::TaskStarted(started) => started.resumed = self.request.resume.is_some(),
            EventBody::FileRead(file) => file.path = self.relative(&file.path),
            EventBody::FileChanged(file) => file.path = self.relative(&file.path),
            _ => {}
        }
        body
    }

    fn relative(&self, path: &str) -> String {
        let worktree = &self.record.worktree_path;
        match std::path::Path::new(path).strip_prefix(worktree) {
            Ok(rest) if !rest.as_os_str().is_empty() => rest.to_string_lossy().into_owned(),
            _ => path.to_owned(),
        }
    }
}

/// The note for an agent's last line left without its end when its output could not all be
/// written: it is no line of the agent's, and is skipped.
fn cut_short(stdout: &std::path::Path) -> String {
    format!(
        "the agent's output could not all be written to {} (a full disk): its last line is cut short and was skipped",
        stdout.display()
    )
}

/// A `message` from codehands about the run.
fn system_note(text: String) -> EventBody {
    EventBody::Message(Message {
        text,
        role: MessageRole::System,
        ..Message::default()
    })
}

/// The result of a turn the caller interrupted: whatever the agent says of it (an agent
/// may well call an interrupted turn an error), the turn ended as asked, and its change
/// awaits approval.
/// A finished turn whose remote box then failed (its result refused, nothing applied): the
/// turn failed, with the box's words.
fn refused_by_the_box(held: Held, exit_code: Option<i32>, stderr: &str) -> Held {
    let EventBody::TaskFinished(finished) = &held.body else {
        return held;
    };
    let why = stderr
        .lines()
        .rev()
        .find(|l| l.contains("the remote box"))
        .unwrap_or("the remote box failed after the agent's result")
        .trim()
        .to_owned();
    Held {
        body: EventBody::TaskFailed(TaskFailed {
            reason: crate::event::FailureKind::NoResult,
            message: format!("{why}: nothing of the agent's work was applied"),
            stderr: Some(stderr.to_owned()).filter(|s| !s.is_empty()),
            exit_code,
            cost_usd: finished.cost_usd,
        }),
        ..held
    }
}

fn ended_by_interrupt(held: Held) -> Held {
    let finished = match held.body {
        EventBody::TaskFinished(finished) => finished,
        EventBody::TaskFailed(failed) => TaskFinished {
            cost_usd: failed.cost_usd,
            ..TaskFinished::default()
        },
        other => {
            return Held {
                body: other,
                ..held
            };
        }
    };
    Held {
        body: EventBody::TaskFinished(TaskFinished {
            interrupted: true,
            ..finished
        }),
        ..held
    }
}

/// The values of variables whose names say they are secret (keys, tokens, passwords), and
/// of those the agent declares as its key (`Agent::secret_envs`) whatever their names.
fn secret_values(env: &[(String, String)], declared: &[String]) -> Vec<String> {
    const MARKS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
    env.iter()
        .filter(|(k, v)| {
            v.len() >= 8
                && (declared.contains(k)
                    || MARKS.iter().any(|m| k.to_ascii_uppercase().contains(m)))
        })
        .map(|(_, v)| v.clone())
        .collect()
}

/// A line without its trailing `\r` (an agent that prints CRLF).
fn strip_cr(mut text: String) -> String {
    if text.ends_with('\r') {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_turn_whose_remote_box_then_failed_is_a_failed_turn_with_the_boxs_words() {
        let held = Held {
            body: EventBody::TaskFinished(TaskFinished {
                cost_usd: Some(0.25),
                ..TaskFinished::default()
            }),
            raw: None,
            linger_until: None,
        };
        let stderr = "warming up\ncodehands: the remote box: the box's result was refused: a link leaves the tree\n";
        let failed = refused_by_the_box(held, Some(125), stderr);
        let EventBody::TaskFailed(failed) = failed.body else {
            panic!("not a failure: {:?}", failed.body);
        };
        assert_eq!(failed.reason, crate::event::FailureKind::NoResult);
        assert!(
            failed.message.contains("a link leaves the tree"),
            "{}",
            failed.message
        );
        assert!(
            failed
                .message
                .contains("nothing of the agent's work was applied")
        );
        assert_eq!((failed.exit_code, failed.cost_usd), (Some(125), Some(0.25)));
        // A turn that failed already keeps its own failure.
        let own = Held {
            body: EventBody::TaskFailed(TaskFailed {
                reason: crate::event::FailureKind::AuthFailed,
                message: "the key was refused".to_owned(),
                stderr: None,
                exit_code: Some(1),
                cost_usd: None,
            }),
            raw: None,
            linger_until: None,
        };
        assert!(matches!(
            refused_by_the_box(own, Some(125), stderr).body,
            EventBody::TaskFailed(TaskFailed {
                reason: crate::event::FailureKind::AuthFailed,
                ..
            })
        ));
    }
}
