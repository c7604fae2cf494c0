//! `FakeRunner`: an implementation of `runner_contract::Runner` that plays a script.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use runner_contract::event::{ApprovalRequested, TaskStopped};
use runner_contract::{
    AgentName, ApproveResult, DiffResult, Error, Event, EventBody, EventSequence, EventStream,
    RecoveryReport, Result, Runner, SessionId, SessionRecord, SessionState, StartOptions,
    WorktreeSpec,
};
use runner_core::SessionStore;
use tokio::sync::{mpsc, oneshot};

use crate::script;

/// How the fake runner plays.
#[derive(Debug, Clone)]
pub struct FakeRunnerOptions {
    /// The pause before each event (300 ms by default, 0 in tests).
    pub delay: Duration,
}

impl Default for FakeRunnerOptions {
    fn default() -> Self {
        Self {
            delay: Duration::from_millis(300),
        }
    }
}

/// A `Runner` that needs no repo and no agent: 12 scripted events, then
/// `approval.requested`. Every method works, stop and resume included, with the
/// same state rules as the real runner. Records live in memory.
pub struct FakeRunner {
    store: Arc<SessionStore>,
    options: FakeRunnerOptions,
    /// Running sessions: where to send a stop request (answered once stopped).
    live: Arc<Mutex<HashMap<SessionId, mpsc::Sender<oneshot::Sender<()>>>>>,
    /// Every event played, per session: the fake's event log, for `events`.
    played: Played,
}

/// The events played so far, per session.
type Played = Arc<Mutex<HashMap<SessionId, Vec<Event>>>>;

impl FakeRunner {
    /// A fake runner with `options`.
    pub fn new(options: FakeRunnerOptions) -> Self {
        Self {
            store: Arc::new(SessionStore::in_memory()),
            options,
            live: Arc::default(),
            played: Arc::default(),
        }
    }

    fn play(&self, record: &SessionRecord, bodies: Vec<EventBody>) -> EventStream {
        let (events_tx, events_rx) = mpsc::channel(1);
        let (stop_tx, stop_rx) = mpsc::channel(1);
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(record.session_id, stop_tx);
        let player = Player {
            store: self.store.clone(),
            live: self.live.clone(),
            played: self.played.clone(),
            seq: EventSequence::continuing(record.session_id, record.last_seq),
            branch: record.branch.clone(),
            delay: self.options.delay,
            events: events_tx,
            stops: stop_rx,
        };
        tokio::spawn(player.run(bodies));
        Box::pin(futures::stream::unfold(events_rx, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        }))
    }
}

impl Default for FakeRunner {
    fn default() -> Self {
        Self::new(FakeRunnerOptions::default())
    }
}

/// Plays one run's script into the stream, honouring stop requests between events.
struct Player {
    store: Arc<SessionStore>,
    live: Arc<Mutex<HashMap<SessionId, mpsc::Sender<oneshot::Sender<()>>>>>,
    played: Played,
    seq: EventSequence,
    branch: String,
    delay: Duration,
    events: mpsc::Sender<Event>,
    stops: mpsc::Receiver<oneshot::Sender<()>>,
}

impl Player {
    async fn run(mut self, bodies: Vec<EventBody>) {
        for body in bodies {
            if !self.delay.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(self.delay) => {}
                    Some(ack) = self.stops.recv() => return self.stop(None, ack).await,
                }
            }
            if let EventBody::TaskFinished(mut finished) = body {
                finished.diff_stat = Some(script::fake_diff_stat());
                return self.finish(EventBody::TaskFinished(finished)).await;
            }
            let event = self.seq.next(body, None);
            if self.save_seq().is_err() {
                return;
            }
            // Hand the event over, unless a stop arrives while the reader is busy:
            // then the event still goes out first, so seq stays contiguous.
            self.keep(&event);
            let send = self.events.send(event.clone());
            tokio::select! {
                _ = send => {}
                Some(ack) = self.stops.recv() => return self.stop(Some(event), ack).await,
            }
        }
    }

    fn save_seq(&self) -> Result<()> {
        let last = self.seq.last_seq();
        self.store.update(&self.seq.session_id(), |r| {
            r.last_seq = last;
            Ok(())
        })?;
        Ok(())
    }

    async fn finish(mut self, finished: EventBody) {
        let stat = script::fake_diff_stat();
        let done = self.seq.next(finished, None);
        let approval = self.seq.next(
            EventBody::ApprovalRequested(ApprovalRequested {
                branch: self.branch.clone(),
                diff_stat: stat,
            }),
            None,
        );
        let last = self.seq.last_seq();
        // The state and the last seq change together, before anyone can see task.finished.
        let saved = self.store.update(&self.seq.session_id(), |r| {
            r.last_seq = last;
            r.move_to(SessionState::AwaitingApproval, "finish the run")
        });
        self.forget();
        if saved.is_ok() {
            self.keep(&done);
            self.keep(&approval);
            let _ = self.events.send(done).await;
            let _ = self.events.send(approval).await;
        }
    }

    async fn stop(mut self, pending: Option<Event>, ack: oneshot::Sender<()>) {
        let stopped = self
            .seq
            .next(EventBody::TaskStopped(TaskStopped::default()), None);
        let last = self.seq.last_seq();
        let saved = self.store.update(&self.seq.session_id(), |r| {
            r.last_seq = last;
            r.move_to(SessionState::Stopped, "stop the session")
        });
        self.forget();
        let _ = ack.send(());
        if saved.is_ok() {
            self.keep(&stopped);
            if let Some(event) = pending {
                let _ = self.events.send(event).await;
            }
            let _ = self.events.send(stopped).await;
        }
    }

    /// Keeps `event` in the fake's log (before anyone receives it, as the real runner does).
    fn keep(&self, event: &Event) {
        self.played
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(event.session_id)
            .or_default()
            .push(event.clone());
    }

    fn forget(&self) {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.seq.session_id());
    }
}

fn fake_commit(id: &SessionId) -> String {
    // 40 hex characters, stable per session; there is no repository behind it.
    let hex: String = id
        .to_string()
        .chars()
        .filter(char::is_ascii_hexdigit)
        .collect();
    format!("{hex}{}", &hex[..8])
}

#[async_trait]
impl Runner for FakeRunner {
    async fn start(&self, options: StartOptions) -> Result<EventStream> {
        if options.prompt.trim().is_empty() {
            return Err(Error::invalid_input(
                "the prompt is empty: say what the agent should do",
            ));
        }
        let id = options.session_id;
        // The fake runner makes no worktree: the repo stands in for it, and every session
        // is the fake agent's, whatever the options name.
        let worktree = WorktreeSpec {
            repo: options.repo_path.clone(),
            base: "0".repeat(40),
            branch: format!("codehands/fake-{}", id.short()),
            path: options.repo_path.clone(),
        };
        let mut record = SessionRecord::queued(&options, "fake".into(), worktree);
        record.agent = AgentName::parse("fake").expect("a valid name");
        record.permissions = Default::default();
        self.store.create(&record)?;
        let record = self
            .store
            .move_to(&id, SessionState::Running, "start the session")?;
        Ok(self.play(&record, script::first_run(options.model.as_deref())))
    }

    async fn diff(&self, session_id: &SessionId) -> Result<DiffResult> {
        self.store.get(session_id)?;
        Ok(DiffResult {
            patch: script::FAKE_PATCH.into(),
            stat: script::fake_diff_stat(),
        })
    }

    async fn approve(&self, session_id: &SessionId, _message: &str) -> Result<ApproveResult> {
        let commit = fake_commit(session_id);
        let (_, record) = self.store.update(session_id, |r| {
            r.move_to(SessionState::Approved, "approve")?;
            r.commit = Some(commit.clone());
            Ok(())
        })?;
        Ok(ApproveResult {
            branch: record.branch,
            commit,
        })
    }

    async fn reject(&self, session_id: &SessionId) -> Result<()> {
        self.store
            .move_to(session_id, SessionState::Rejected, "reject")
            .map(drop)
    }

    async fn stop(&self, session_id: &SessionId) -> Result<()> {
        let record = self.store.get(session_id)?;
        if !record.state.can_move_to(SessionState::Stopped) {
            return Err(Error::illegal_move(
                record.state,
                SessionState::Stopped,
                "stop",
            ));
        }
        let control = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session_id)
            .cloned();
        let (ack_tx, ack_rx) = oneshot::channel();
        let acknowledged = match control {
            Some(control) => control.send(ack_tx).await.is_ok() && ack_rx.await.is_ok(),
            None => false,
        };
        if acknowledged {
            return Ok(());
        }
        // The run ended between our check and the request: report the state it ended in.
        let now = self.store.get(session_id)?.state;
        Err(Error::illegal_move(now, SessionState::Stopped, "stop"))
    }

    async fn resume(&self, session_id: &SessionId, prompt: Option<String>) -> Result<EventStream> {
        let record = self
            .store
            .move_to(session_id, SessionState::Running, "resume")?;
        Ok(self.play(&record, script::resumed_run(prompt.as_deref())))
    }

    async fn recover(&self) -> Result<RecoveryReport> {
        // Records live in memory, so nothing outlives this runner: nothing to recover.
        Ok(RecoveryReport::default())
    }

    async fn session(&self, session_id: &SessionId) -> Result<SessionRecord> {
        self.store.get(session_id)
    }

    async fn sessions(&self) -> Result<Vec<SessionRecord>> {
        Ok(self.store.list()?.records)
    }

    async fn report(&self, session_id: &SessionId) -> Result<runner_contract::RunReport> {
        let record = self.store.get(session_id)?;
        let events = self
            .played
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session_id)
            .cloned()
            .unwrap_or_default();
        Ok(runner_core::report::build(runner_core::ReportInput {
            record: &record,
            events: &events,
            agent_program: None,
            agent_version: None,
        }))
    }

    async fn send(&self, session_id: &SessionId, text: String) -> Result<runner_contract::Sent> {
        let record = self.store.get(session_id)?;
        if record.state == SessionState::Running {
            return Err(Error::new(
                runner_contract::ErrorKind::Unsupported,
                "the fake runner's scripted runs take no input while they run: send it once the session awaits approval",
            ));
        }
        if text.trim().is_empty() {
            return Err(Error::invalid_input(
                "the message is empty: say what the agent should do next",
            ));
        }
        // A follow-up plays the scripted resumed run, told the text.
        let record = self
            .store
            .move_to(session_id, SessionState::Running, "send a follow-up")?;
        Ok(runner_contract::Sent::FollowUp(
            self.play(&record, script::resumed_run(Some(&text))),
        ))
    }

    async fn answer(
        &self,
        session_id: &SessionId,
        request_id: &str,
        _answer: runner_contract::PermissionAnswer,
    ) -> Result<()> {
        self.store.get(session_id)?;
        Err(Error::not_found(format!(
            "session {session_id} has no permission request {request_id:?}: the fake runner's scripted runs never ask"
        )))
    }

    async fn interrupt(&self, session_id: &SessionId) -> Result<()> {
        self.store.get(session_id)?;
        Err(Error::new(
            runner_contract::ErrorKind::Unsupported,
            "the fake runner's scripted runs cannot be interrupted: stop the session instead",
        ))
    }

    async fn events(&self, session_id: &SessionId, after_seq: u64) -> Result<EventStream> {
        self.store.get(session_id)?;
        let state = (
            self.store.clone(),
            self.played.clone(),
            *session_id,
            after_seq,
        );
        Ok(Box::pin(futures::stream::unfold(
            state,
            |(store, played, id, after)| async move {
                loop {
                    let next = played
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&id)
                        .and_then(|events| events.iter().find(|e| e.seq > after).cloned());
                    if let Some(event) = next {
                        let seq = event.seq;
                        return Some((event, (store, played, id, seq)));
                    }
                    let running = store
                        .get(&id)
                        .is_ok_and(|r| r.state == SessionState::Running);
                    if !running {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        )))
    }
}
