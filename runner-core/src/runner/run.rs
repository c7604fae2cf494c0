//! The supervisor of one run: spawns the agent, frames and parses its output,
//! watches it, and ends the run with exactly one terminal event.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::control::RunFiles;
use super::{Shared, StopRequest, cleanup};
use crate::error::{Error, ErrorKind, Result};
use crate::event::{
    ApprovalRequested, Event, EventBody, FailureKind, Message, MessageRole, ProviderState,
    TaskFailed, TaskFinished, TaskStopped,
};
use crate::process::AgentProcess;
use crate::process::lines::Line;
use crate::process::tree::{self, ProcessIdentity};
use crate::redact::Redactor;
use crate::sequence::EventSequence;
use crate::session::{SessionRecord, SessionState};
use crate::traits::agent::{Agent, AgentRequest, StdinClose};
use crate::traits::memory::{RepoProfile, RunSummary};
use crate::traits::sandbox::{BoxLimits, SandboxRequest};

/// Why the read loop ended before the agent's output did.
enum Interruption {
    Stop(Option<StopRequest>),
    Idle,
    Linger,
    AuthFailed(String),
}

/// One run, from spawn to its terminal event.
pub(super) struct Supervisor {
    shared: Arc<Shared>,
    record: SessionRecord,
    agent: Arc<dyn Agent>,
    request: AgentRequest,
    verify: bool,
    seq: EventSequence,
    events: mpsc::Sender<Event>,
    stops: mpsc::Receiver<StopRequest>,
    files: RunFiles,
    transcript: Option<std::io::BufWriter<std::fs::File>>,
    profile: RepoProfile,
    /// Cuts the secret values given to the agent (API keys, tokens), in every form, out
    /// of every line it prints, its stderr and this run's note.
    redactor: Redactor,
}

impl Supervisor {
    pub(super) fn new(
        shared: Arc<Shared>,
        record: SessionRecord,
        agent: Arc<dyn Agent>,
        request: AgentRequest,
        verify: bool,
        events: mpsc::Sender<Event>,
        stops: mpsc::Receiver<StopRequest>,
    ) -> Self {
        let files = RunFiles::in_home(&shared.home, &record.session_id);
        Self {
            seq: EventSequence::continuing(record.session_id, record.last_seq),
            shared,
            record,
            agent,
            request,
            verify,
            events,
            stops,
            files,
            transcript: None,
            profile: RepoProfile::default(),
            redactor: Redactor::default(),
        }
    }

    pub(super) async fn run(mut self) {
        self.files.clear_stop();
        if let Some(me) = ProcessIdentity::current()
            && let Err(e) = self.files.set_runner(&me)
        {
            self.note(format!("cannot write the run's control files: {e}"))
                .await;
        }
        self.prepare().await;
        match self.spawn().await {
            Ok((process, close_policy)) => {
                self.save_profile().await;
                self.supervise(process, close_policy).await
            }
            Err(e) => {
                let reason = if e.kind() == ErrorKind::InvalidInput {
                    FailureKind::InvalidInput
                } else {
                    FailureKind::AgentUnavailable
                };
                self.fail(reason, e.to_string(), None, None, None).await;
            }
        }
        self.files.clear_runner();
        self.shared
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.record.session_id);
    }

    /// Reads the repo's notes and profile; a memory error never fails a run.
    async fn prepare(&mut self) {
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
                        self.note(format!(
                            "repo memory: cannot write the notes for the agent ({e}); it runs without them"
                        ))
                        .await
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                self.note(format!("repo memory: cannot read the notes: {e}"))
                    .await
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
        match self.files.open_transcript() {
            Ok(file) => self.transcript = Some(std::io::BufWriter::new(file)),
            Err(e) => self.note(format!("cannot open the transcript: {e}")).await,
        }
    }

    /// Saves the repo profile when it changed; after the spawn, so the agent is not kept waiting.
    async fn save_profile(&mut self) {
        let memory = self.shared.memory.clone();
        let key = self.record.repo_key.clone();
        if matches!(memory.profile(&key).await, Ok(Some(saved)) if saved == self.profile) {
            return;
        }
        if let Err(e) = memory.save_profile(&key, &self.profile).await {
            self.note(format!("repo memory: cannot save the profile: {e}"))
                .await;
        }
    }

    async fn spawn(&mut self) -> Result<(AgentProcess, StdinClose)> {
        let invocation = self.agent.invocation(&self.request)?;
        let env = crate::process::env::agent_env(
            self.shared.settings.caller_env.iter().cloned(),
            &self.agent.provider_env(),
            &self.shared.settings.extra_env,
            &invocation.env,
        );
        self.redactor = Redactor::new(secret_values(&env));
        let process = AgentProcess::spawn(&invocation, &self.record.worktree_path, &env)?;
        if let Err(e) = self.files.set_agent(&process.identity()) {
            self.note(format!("cannot record the agent's pid: {e}"))
                .await;
        }
        Ok((process, invocation.close_stdin))
    }

    async fn supervise(&mut self, mut process: AgentProcess, close_policy: StdinClose) {
        let mut parser = self.agent.parser();
        let watchdog = self.shared.settings.watchdog;
        let mut held: Option<(EventBody, Option<String>)> = None;
        let mut linger_until: Option<Instant> = None;
        let mut interruption = None;
        let mut idle_until = Instant::now() + watchdog.idle;
        loop {
            let linger = async {
                match linger_until {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                line = process.stdout.next_line() => {
                    idle_until = Instant::now() + watchdog.idle;
                    let line = match line {
                        Ok(Some(line)) => line,
                        Ok(None) | Err(_) => break,
                    };
                    let text = match line {
                        Line::Text(text) => text,
                        Line::Oversized { bytes } => {
                            self.note(format!("the agent printed a line of {bytes} bytes, over the limit; it was skipped")).await;
                            continue;
                        }
                    };
                    // The agent may print its own key (a test script dumping its environment),
                    // escaped, encoded or cut short: cut here, before the line is decoded, it
                    // never reaches the transcript, an event's payload or its raw line.
                    let text = self.redactor.redact_string(text);
                    self.write_transcript(&text);
                    for body in parser.parse_line(&text) {
                        if let Some(why) = self.auth_failure(&body) {
                            interruption.get_or_insert(Interruption::AuthFailed(why));
                        }
                        if body.is_terminal() {
                            if held.is_none() {
                                held = Some((body, Some(text.clone())));
                                linger_until = Some(Instant::now() + watchdog.linger);
                                if close_policy == StdinClose::AfterResult {
                                    process.close_stdin();
                                }
                            }
                        } else {
                            self.emit(body, Some(text.clone())).await;
                        }
                    }
                    if interruption.is_some() {
                        break;
                    }
                }
                Some(ack) = self.stops.recv() => { interruption = Some(Interruption::Stop(Some(ack))); break; }
                () = tokio::time::sleep_until(idle_until) => { interruption = Some(Interruption::Idle); break; }
                () = linger => { interruption = Some(Interruption::Linger); break; }
            }
        }
        let grace = self.shared.settings.stop_grace;
        if interruption.is_some() {
            process.end_tree(grace).await;
        }
        // Output ended: wait for the exit, but not forever (a child may hold the pipe or the process may hang).
        let exit = match tokio::time::timeout(watchdog.linger, process.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                interruption.get_or_insert(Interruption::Linger);
                process.end_tree(grace).await;
                None
            }
        };
        // Children the agent left behind die with the run.
        if tree::group_alive(process.identity().pid) {
            process.end_tree(grace).await;
        }
        self.files.clear_agent();
        let exit_code = exit.and_then(|s| s.code());
        for body in parser.finish(exit_code) {
            if !body.is_terminal() {
                self.emit(body, None).await;
            } else if held.is_none() {
                // An agent with no result line of its own ends the run at its exit.
                held = Some((body, None));
            }
        }
        let stderr = self.redactor.redact_string(process.stderr_tail().await);
        if self.files.stop_requested() && !matches!(interruption, Some(Interruption::Stop(_))) {
            interruption = Some(Interruption::Stop(None));
        }
        self.flush_transcript();
        self.conclude(interruption, held, exit_code, stderr).await;
    }

    /// The run's end: exactly one terminal event, and the state to match.
    async fn conclude(
        &mut self,
        interruption: Option<Interruption>,
        held: Option<(EventBody, Option<String>)>,
        exit_code: Option<i32>,
        stderr: String,
    ) {
        let stderr = (!stderr.trim().is_empty()).then_some(stderr);
        let watchdog = self.shared.settings.watchdog;
        match (interruption, held) {
            (Some(Interruption::Stop(ack)), _) => self.stopped(ack).await,
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
                let message = format!(
                    "the agent exited without a result ({code}): check that it is installed, on PATH and logged in; stderr says more"
                );
                self.fail(FailureKind::NoResult, message, stderr, exit_code, None)
                    .await;
            }
        }
    }

    async fn finished(&mut self, mut finished: TaskFinished, raw: Option<String>) {
        let diff = match self.shared.vcs.diff(&self.record.worktree_spec()).await {
            Ok(diff) => diff,
            Err(e) => {
                let message = format!("the agent finished but its change could not be read: {e}");
                return self
                    .fail(FailureKind::Vcs, message, None, None, finished.cost_usd)
                    .await;
            }
        };
        if self.verify {
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
            self.note(format!("repo memory: cannot add this run's note: {e}"))
                .await;
        }
        finished.diff_stat = Some(diff.stat.clone());
        let done = self.seq.next(EventBody::TaskFinished(finished), raw);
        let approval = self.seq.next(
            EventBody::ApprovalRequested(ApprovalRequested {
                branch: self.record.branch.clone(),
                diff_stat: diff.stat,
            }),
            None,
        );
        if self
            .save_end(SessionState::AwaitingApproval, None)
            .await
            .is_ok()
        {
            self.send(done).await;
            self.send(approval).await;
        }
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
            self.note(format!("sandbox: {}", error.message)).await;
        }
        // The verify gate (verify.rs): approve reads this verdict, from any process.
        if let Err(e) =
            super::verify::Verdict::of(&result).save(&self.shared.home, &self.record.session_id)
        {
            self.note(format!("sandbox: cannot keep the verdict: {e}"))
                .await;
        }
        let body = super::verify::test_result(&result);
        self.emit(body, None).await;
    }

    async fn stopped(&mut self, ack: Option<StopRequest>) {
        let event = self
            .seq
            .next(EventBody::TaskStopped(TaskStopped::default()), None);
        let saved = self.save_end(SessionState::Stopped, None).await;
        self.files.clear_stop();
        if let Some(ack) = ack {
            let _ = ack.send(());
        }
        if saved.is_ok() {
            self.send(event).await;
        }
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
        let event = self.seq.next(EventBody::TaskFailed(failed), raw);
        let saved = self.save_end(SessionState::Failed, Some(message)).await;
        // Failed is final and nothing else would remove the worktree: clean up now
        // (keeping the branch if the agent committed to it).
        if let Err(e) = cleanup::discard_failed(&self.shared, &self.record).await {
            tracing::warn!(session = %self.record.session_id, "cleanup after a failure: {e}");
        }
        if saved.is_ok() {
            self.send(event).await;
        }
    }

    /// Saves the final state with the last seq, before the final events go out.
    async fn save_end(&mut self, state: SessionState, failure: Option<String>) -> Result<()> {
        let last = self.seq.last_seq();
        let agent_session = self.record.agent_session_id.clone();
        let saved = self.shared.store.update(&self.record.session_id, |r| {
            r.last_seq = last;
            r.agent_session_id = r.agent_session_id.take().or(agent_session);
            r.failure = failure;
            r.move_to(state, "end the run")
        });
        if let Err(e) = &saved {
            tracing::error!(session = %self.record.session_id, "cannot save the end of the run: {e}");
            // Still tell the reader how it ended, or it would wait forever.
            let body = EventBody::TaskFailed(TaskFailed {
                reason: FailureKind::Internal,
                message: format!("the session record could not be saved: {e}"),
                stderr: None,
                exit_code: None,
                cost_usd: None,
            });
            let event = self.seq.next(body, None);
            self.send(event).await;
        }
        saved.map(drop)
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

    async fn note(&mut self, text: String) {
        let body = EventBody::Message(Message {
            text,
            role: MessageRole::System,
            ..Message::default()
        });
        self.emit(body, None).await;
    }

    async fn emit(&mut self, body: EventBody, raw: Option<String>) {
        let body = self.normalise(body);
        let event = self.seq.next(body, raw);
        self.send(event).await;
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

    async fn send(&self, event: Event) {
        // A reader that went away does not stop the run: it still ends and is saved.
        let _ = self.events.send(event).await;
    }

    fn write_transcript(&mut self, line: &str) {
        if let Some(out) = &mut self.transcript {
            let ok = out
                .write_all(line.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            if ok.is_err() {
                self.transcript = None;
            }
        }
    }

    fn flush_transcript(&mut self) {
        if let Some(out) = &mut self.transcript {
            let _ = out.flush();
        }
    }
}

/// The values of variables whose names say they are secret (keys, tokens, passwords).
fn secret_values(env: &[(String, String)]) -> Vec<String> {
    const MARKS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
    env.iter()
        .filter(|(k, v)| v.len() >= 8 && MARKS.iter().any(|m| k.to_ascii_uppercase().contains(m)))
        .map(|(_, v)| v.clone())
        .collect()
}

fn human(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs().max(1))).to_string()
}

/// stop() for a run supervised by another process (or by none, after a crash).
pub(super) async fn stop_from_elsewhere(shared: &Shared, record: &SessionRecord) -> Result<()> {
    let id = record.session_id;
    let files = RunFiles::in_home(&shared.home, &id);
    files.request_stop()?;
    let grace = shared.settings.stop_grace;
    // Looked at before the agent is ended: once it is, a live supervisor finishes the
    // stop and goes away, which must not look like an orphaned run.
    let supervised = files.runner().is_some_and(|r| r.is_alive());
    if let Some(agent) = files.agent() {
        tree::end_group(&agent, grace).await;
    }
    if supervised {
        // The supervising process sees the agent exit and the stop request, and saves `stopped`.
        let deadline = Instant::now() + grace + Duration::from_secs(15);
        while Instant::now() < deadline {
            let state = shared.store.get(&id)?.state;
            if state != SessionState::Running {
                return if state == SessionState::Stopped {
                    Ok(())
                } else {
                    Err(Error::illegal_move(state, SessionState::Stopped, "stop"))
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        return Err(Error::internal(format!(
            "session {id} did not stop within {}: its runner may hang; try again or run `codehands recover`",
            human(grace + Duration::from_secs(15))
        )));
    }
    // No runner is alive: either its supervisor finished the stop and left between our
    // two looks (then the record already says stopped), or the run was orphaned: its
    // agent is ended, so record the stop here.
    files.clear_stop();
    files.clear_agent();
    files.clear_runner();
    match shared.store.get(&id)?.state {
        SessionState::Stopped => Ok(()),
        _ => shared
            .store
            .move_to(&id, SessionState::Stopped, "stop")
            .map(drop),
    }
}
