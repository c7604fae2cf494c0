//! One ACP session of `codehands acp`: a folder, and the codehands session its prompts run
//! in. A prompt starts one (the first, or after an approve or a reject), follows one up (it
//! awaits approval and its agent can continue) or resumes one (it was stopped); its events
//! go to the client, and the turn's change is put to the client (`ask.rs`).
//!
//! A cancel is honoured at any instant: before the turn started, nothing starts; while it
//! starts or runs, the inner agent is interrupted (stopped, when it cannot be interrupted
//! yet) and stopped after [`STOP_GRACE`] if its turn has not ended by then. The prompt
//! answers `cancelled` within [`ANSWER_WAIT`] of the cancel: a turn still winding down goes
//! on in its own task, holding the session's turn lock (the next prompt waits for it), and
//! its updates are no longer sent (ACP: a turn's updates come before its prompt's answer).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use runner_contract::{EventBody, EventStream, Runner, SessionId, SessionState, StartOptions};
use runner_contract::{Sent, options::Permissions};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::updates::Updates;
use super::{Answer, INTERNAL_ERROR, INVALID_PARAMS, RpcError, Server, internal, lock};

/// How long a cancelled prompt waits for its turn to end by itself before it answers.
const ANSWER_WAIT: Duration = Duration::from_millis(500);

/// How long an interrupted inner agent has to end its turn before it is stopped.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(5);

/// One ACP session.
pub(super) struct Session {
    /// Its id for the client: the id of the codehands session its first prompt starts.
    pub(super) acp_id: String,
    repo: PathBuf,
    state: Mutex<State>,
    /// Held by a turn from its start to its very end, which may come after its prompt was
    /// answered (a cancel): the next turn waits for it.
    turn_lock: Arc<tokio::sync::Mutex<()>>,
    /// What the session's updates carry from turn to turn (its cost so far).
    carried: Mutex<Updates>,
}

#[derive(Debug)]
struct State {
    /// The codehands session the next prompt continues, if there is one.
    current: Option<SessionId>,
    /// The id the next new codehands session gets (the ACP session's own, the first time).
    next: Option<SessionId>,
    /// The cancel of the prompt being answered, if one is.
    prompt: Option<watch::Sender<bool>>,
}

/// What one turn is given: its cancel, and whether its prompt was answered already.
#[derive(Clone)]
pub(super) struct TurnSignals {
    pub(super) cancel: watch::Receiver<bool>,
    pub(super) answered: Arc<AtomicBool>,
}

impl TurnSignals {
    /// Whether the client cancelled the prompt.
    pub(super) fn cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Waits until the client cancels the prompt (forever if it never does).
    pub(super) async fn until_cancelled(&self) {
        let mut cancel = self.cancel.clone();
        if cancel.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Sends `update` to the client, unless the prompt was answered.
    pub(super) fn update(&self, server: &Server, session: &str, update: Value) {
        if !self.answered.load(Ordering::SeqCst) {
            server.conn.update(session, update);
        }
    }
}

/// How a turn ended, for the prompt's answer.
pub(super) enum Ending {
    /// With a change to put to the client.
    Finished {
        branch: String,
        diff: runner_contract::DiffStat,
    },
    /// Interrupted or stopped by the client's cancel, or never started.
    Cancelled,
    /// Failed, saying why.
    Failed(String),
}

impl Session {
    /// A new session in `repo`; nothing starts until its first prompt.
    pub(super) fn new(id: SessionId, repo: PathBuf) -> Self {
        Self::with(id.to_string(), repo, None, Some(id))
    }

    fn with(
        acp_id: String,
        repo: PathBuf,
        current: Option<SessionId>,
        next: Option<SessionId>,
    ) -> Self {
        Self {
            acp_id,
            repo,
            state: Mutex::new(State {
                current,
                next,
                prompt: None,
            }),
            turn_lock: Arc::new(tokio::sync::Mutex::new(())),
            carried: Mutex::new(Updates::default()),
        }
    }

    /// The codehands session `id`, its events replayed to the client from our log; refused
    /// when its repository, or the folder `repo` the client names, cannot be used now. A
    /// session made by `session/new` whose first prompt has not come (so no codehands
    /// session exists yet) loads as it is: nothing to replay, and its first prompt starts
    /// it under that id.
    pub(super) async fn loaded(id: SessionId, repo: PathBuf, server: &Server) -> Answer<Arc<Self>> {
        if let Some(made) = server.session(&id.to_string()) {
            server.check_folder(&repo).await?;
            let current = lock(&made.state).current;
            if let Some(current) = current {
                replay(server, &made.acp_id, current).await?;
            }
            return Ok(made);
        }
        let record = match server.runner.session(&id).await {
            Ok(record) => record,
            Err(e) if e.kind() == runner_contract::ErrorKind::NotFound => {
                server.check_folder(&repo).await?;
                return Ok(Arc::new(Self::new(id, repo)));
            }
            Err(e) => return Err(RpcError::new(INVALID_PARAMS, e.to_string())),
        };
        // A session whose repository is gone (or is no repo now) cannot go on: said now,
        // not at its next prompt.
        if let Err(e) = server.runner.check_repo(&record.repo_path).await {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "codehands session {id} was made in {}, which cannot be used now: {e}; put \
                     the repository back there, or open a new session",
                    record.repo_path.display()
                ),
            ));
        }
        server.check_folder(&repo).await?;
        let session = Self::with(id.to_string(), repo, Some(id), None);
        *lock(&session.carried) = replay(server, &session.acp_id, id).await?;
        Ok(Arc::new(session))
    }

    /// Takes a prompt in, in the order the client's lines came (before any later cancel is
    /// read): the signals its turn watches, or the refusal of a second prompt at once.
    pub(super) fn begin(&self) -> Answer<TurnSignals> {
        let mut state = lock(&self.state);
        if state.prompt.is_some() {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "a prompt of this session is still running: wait for its answer, or cancel it",
            ));
        }
        let (tx, rx) = watch::channel(false);
        state.prompt = Some(tx);
        Ok(TurnSignals {
            cancel: rx,
            answered: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The client's `session/cancel`: the prompt being answered, if any, is cancelled.
    pub(super) fn cancel(&self) {
        if let Some(prompt) = &lock(&self.state).prompt {
            prompt.send_replace(true);
        }
    }

    /// Runs one prompt taken in by [`Session::begin`] to its answer.
    pub(super) async fn prompt(
        self: &Arc<Self>,
        server: &Arc<Server>,
        text: String,
        signals: TurnSignals,
    ) -> Answer<Value> {
        let (session, in_turn, turn_server) = (self.clone(), signals.clone(), server.clone());
        let mut turn = tokio::spawn(async move {
            let _held = session.turn_lock.clone().lock_owned().await;
            session.turn(&turn_server, text, &in_turn).await
        });
        let ended = tokio::select! {
            ended = &mut turn => Some(ended),
            () = signals.until_cancelled() => tokio::time::timeout(ANSWER_WAIT, &mut turn).await.ok(),
        };
        // From here on nothing of this turn reaches the client.
        signals.answered.store(true, Ordering::SeqCst);
        lock(&self.state).prompt = None;
        match ended {
            // Cancelled, and still winding down: it ends in its own task.
            None => {
                lock(&server.winding_down).push(turn);
                Ok(json!({ "stopReason": "cancelled" }))
            }
            Some(Ok(answer)) => answer,
            Some(Err(e)) => Err(RpcError::new(
                INTERNAL_ERROR,
                format!("the turn broke off: {e}"),
            )),
        }
    }

    /// One turn, holding the turn lock: started, followed up or resumed, streamed, and its
    /// change put to the client; the prompt's answer.
    async fn turn(
        &self,
        server: &Arc<Server>,
        text: String,
        signals: &TurnSignals,
    ) -> Answer<Value> {
        if signals.cancelled() {
            // Cancelled before it started: nothing starts.
            return Ok(json!({ "stopReason": "cancelled" }));
        }
        let (id, stream) = match self.continued(server, &text).await? {
            Some(found) => found,
            None => self.start(server, text).await?,
        };
        lock(&self.state).current = Some(id);
        match self.stream(server, id, stream, signals).await? {
            Ending::Finished { .. } | Ending::Cancelled if signals.cancelled() => {
                // Cancelled as it ended: the change stays for a later prompt, unasked.
                Ok(json!({ "stopReason": "cancelled" }))
            }
            Ending::Cancelled => Ok(json!({ "stopReason": "cancelled" })),
            Ending::Finished { branch, diff } => {
                let decided = super::ask::decide(server, self, id, &branch, &diff, signals).await;
                if decided.settled {
                    lock(&self.state).current = None;
                }
                let reason = if decided.cancelled {
                    "cancelled"
                } else {
                    "end_turn"
                };
                Ok(json!({ "stopReason": reason }))
            }
            Ending::Failed(why) => Err(RpcError::new(
                INTERNAL_ERROR,
                format!("the turn failed: {why}"),
            )),
        }
    }

    /// The codehands session a prompt continues, and its turn's events: a follow-up of one
    /// awaiting approval (refused, nothing touched, when its agent cannot continue it), a
    /// resume of a stopped one; `None` when a new one starts.
    async fn continued(
        &self,
        server: &Arc<Server>,
        text: &str,
    ) -> Answer<Option<(SessionId, EventStream)>> {
        let runner = &server.runner;
        let Some(id) = lock(&self.state).current else {
            return Ok(None);
        };
        let record = runner.session(&id).await.map_err(internal)?;
        let continued = match record.state {
            SessionState::AwaitingApproval | SessionState::Stopped => {
                if !runner.can_continue(&id).await.map_err(internal)? {
                    return Err(cannot_continue(&id, &record.agent));
                }
                if record.state == SessionState::Stopped {
                    runner
                        .resume(&id, Some(text.to_owned()))
                        .await
                        .map_err(internal)?
                } else {
                    match runner.send(&id, text.to_owned()).await {
                        Ok(Sent::FollowUp(stream)) => stream,
                        Ok(Sent::Steered) => {
                            return Err(RpcError::new(INTERNAL_ERROR, "the session was running"));
                        }
                        Err(e) => return Err(internal(e)),
                    }
                }
            }
            SessionState::Running => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("codehands session {id} is running a turn already"),
                ));
            }
            _ => return Ok(None),
        };
        Ok(Some((id, continued)))
    }

    /// A new codehands session in the folder, asking the client when the agent can ask.
    async fn start(&self, server: &Arc<Server>, text: String) -> Answer<(SessionId, EventStream)> {
        let id = lock(&self.state)
            .next
            .take()
            .unwrap_or_else(SessionId::new_random);
        let mut options = StartOptions::new(id, &self.repo, text, server.agent.clone());
        options.isolation = server.isolation;
        let asks = server
            .runner
            .agents()
            .get(&server.agent)
            .is_ok_and(|agent| agent.capabilities().ask_permission);
        if asks {
            options.permissions = Permissions::ask();
        }
        let stream = server.runner.start(options).await.map_err(internal)?;
        Ok((id, stream))
    }

    /// Sends the turn's events to the client and says how it ended; a cancel interrupts the
    /// inner agent (or stops it), and stops it after [`STOP_GRACE`].
    async fn stream(
        &self,
        server: &Arc<Server>,
        id: SessionId,
        mut stream: EventStream,
        signals: &TurnSignals,
    ) -> Answer<Ending> {
        let worktree = server
            .runner
            .session(&id)
            .await
            .map_err(internal)?
            .worktree_path;
        let mut updates = lock(&self.carried).live();
        let mut ending = Ending::Failed("the session's events ended before the turn did".into());
        let mut stop_at: Option<tokio::time::Instant> = None;
        let mut stopping = false;
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = signals.until_cancelled(), if stop_at.is_none() => {
                    stop_at = Some(tokio::time::Instant::now() + STOP_GRACE);
                    let server = server.clone();
                    tokio::spawn(async move { interrupt_or_stop(&server, id).await });
                    continue;
                }
                () = tokio::time::sleep_until(stop_at.unwrap_or_else(tokio::time::Instant::now)),
                    if stop_at.is_some() && !stopping => {
                    stopping = true;
                    tracing::info!(session = %id, "the interrupted turn has not ended: stopping it");
                    let server = server.clone();
                    tokio::spawn(async move { stop(&server, id).await });
                    continue;
                }
            };
            let Some(event) = event else { break };
            match &event.body {
                EventBody::PermissionRequested(asked) => {
                    let (server, asked, acp_id, signals) = (
                        server.clone(),
                        asked.clone(),
                        self.acp_id.clone(),
                        signals.clone(),
                    );
                    tokio::spawn(async move {
                        super::ask::relay(&server, id, &acp_id, asked, &signals).await
                    });
                }
                EventBody::ApprovalRequested(_) if matches!(ending, Ending::Cancelled) => {}
                EventBody::ApprovalRequested(approval) => {
                    ending = Ending::Finished {
                        branch: approval.branch.clone(),
                        diff: approval.diff_stat.clone(),
                    };
                }
                EventBody::TaskFinished(finished) if finished.interrupted => {
                    ending = Ending::Cancelled;
                }
                EventBody::TaskFailed(failed) => ending = Ending::Failed(failed.message.clone()),
                EventBody::TaskStopped(_) => ending = Ending::Cancelled,
                _ => {}
            }
            for update in updates.of(&event, &worktree) {
                signals.update(server, &self.acp_id, update);
            }
            if matches!(
                event.body,
                EventBody::ApprovalRequested(_)
                    | EventBody::TaskFailed(_)
                    | EventBody::TaskStopped(_)
            ) {
                break;
            }
        }
        *lock(&self.carried) = updates;
        if matches!(ending, Ending::Failed(_)) {
            lock(&self.state).current = None;
        }
        Ok(ending)
    }
}

/// Sends the client the events of codehands session `id`, from our log, as the updates of
/// ACP session `acp_id`.
async fn replay(server: &Server, acp_id: &str, id: SessionId) -> Answer<Updates> {
    let record = server.runner.session(&id).await.map_err(internal)?;
    let events = server.runner.logged_events(&id, 0).map_err(internal)?;
    let mut updates = Updates::replaying();
    for event in &events {
        for update in updates.of(event, &record.worktree_path) {
            server.conn.update(acp_id, update);
        }
    }
    Ok(updates)
}

/// The refusal of a prompt to a kept session whose agent cannot continue it.
fn cannot_continue(id: &SessionId, agent: &runner_contract::AgentName) -> RpcError {
    RpcError::new(
        INVALID_PARAMS,
        format!(
            "the {agent} agent cannot continue its conversation (it offers neither session/load \
             nor session/resume), so this prompt was not run and nothing was touched: codehands \
             session {id} keeps its change until you approve it (`codehands approve {id}`) or \
             reject it (`codehands reject {id}`); open a new session for a new change"
        ),
    )
}

/// The client's cancel reaches the running turn: the inner agent is interrupted (its change
/// kept), or stopped when it cannot be interrupted (its session not open yet).
async fn interrupt_or_stop(server: &Server, id: SessionId) {
    if let Err(e) = server.runner.interrupt(&id).await {
        tracing::info!(session = %id, "cannot interrupt ({e}): stopping instead");
        stop(server, id).await;
    }
}

async fn stop(server: &Server, id: SessionId) {
    if let Err(e) = server.runner.stop(&id).await {
        tracing::info!(session = %id, "cannot stop: {e}");
    }
}
