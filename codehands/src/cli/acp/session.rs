//! One ACP session of `codehands acp`: a folder, and the codehands session its prompts run
//! in. A prompt starts one (the first, or after an approve or a reject), follows one up (it
//! awaits approval) or resumes one (it was stopped); its events go to the client, the inner
//! agent's permission requests are asked of the client, and the turn's change is put to the
//! client: approve, keep or reject.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use runner_core::options::{PermissionAnswer, Permissions};
use runner_core::{
    EventBody, EventStream, Runner, SessionId, SessionState, StartOptions,
    event::PermissionRequested,
};
use serde_json::{Value, json};

use super::updates::{self, Updates};
use super::{Answer, INTERNAL_ERROR, INVALID_PARAMS, RpcError, Server, internal, lock};

/// What a person at the client is told when they refuse a tool.
const REFUSED: &str = "The person at the ACP client refused this tool.";

/// One ACP session.
pub(super) struct Session {
    /// Its id for the client: the id of the codehands session its first prompt starts.
    pub(super) acp_id: String,
    repo: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The codehands session the next prompt continues, if there is one.
    current: Option<SessionId>,
    /// The id the next new codehands session gets (the ACP session's own, the first time).
    next: Option<SessionId>,
    /// Whether a prompt runs.
    running: bool,
    /// Whether the client cancelled the running prompt.
    cancelled: bool,
}

/// How a turn ended, for the prompt's answer.
enum Ending {
    /// With a change to put to the client.
    Finished {
        branch: String,
        diff: runner_core::DiffStat,
    },
    /// Interrupted or stopped by the client's cancel.
    Cancelled,
    /// Failed, saying why.
    Failed(String),
}

impl Session {
    /// A new session in `repo`; nothing starts until its first prompt.
    pub(super) fn new(id: SessionId, repo: PathBuf) -> Self {
        Self {
            acp_id: id.to_string(),
            repo,
            state: Mutex::new(State {
                current: None,
                next: Some(id),
                running: false,
                cancelled: false,
            }),
        }
    }

    /// The codehands session `id`, its events replayed to the client from our log; refused
    /// when its repository, or the folder `repo` the client names, cannot be used now.
    pub(super) async fn loaded(id: SessionId, repo: PathBuf, server: &Server) -> Answer<Self> {
        let record = server
            .runner
            .session(&id)
            .await
            .map_err(|e| RpcError::new(INVALID_PARAMS, e.to_string()))?;
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
        let session = Self {
            acp_id: id.to_string(),
            repo,
            state: Mutex::new(State {
                current: Some(id),
                next: None,
                running: false,
                cancelled: false,
            }),
        };
        let events = server.runner.logged_events(&id, 0).map_err(internal)?;
        let mut updates = Updates::default();
        for event in &events {
            for update in updates.of(event, &record.worktree_path) {
                server.conn.update(&session.acp_id, update);
            }
        }
        Ok(session)
    }

    /// Runs one prompt to its end; the answer to `session/prompt`.
    pub(super) async fn prompt(&self, server: &Arc<Server>, text: String) -> Answer<Value> {
        {
            let mut state = lock(&self.state);
            if state.running {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "a prompt of this session is still running: wait for its answer, or cancel it",
                ));
            }
            state.running = true;
            state.cancelled = false;
        }
        let ended = self.turn(server, text).await;
        let cancelled = {
            let mut state = lock(&self.state);
            state.running = false;
            state.cancelled
        };
        match ended? {
            Ending::Cancelled => Ok(json!({ "stopReason": "cancelled" })),
            // Cancelled as it ended: the change stays for a later prompt, unasked.
            Ending::Finished { .. } if cancelled => Ok(json!({ "stopReason": "cancelled" })),
            Ending::Finished { branch, diff } => {
                self.decide(server, &branch, &diff).await;
                Ok(json!({ "stopReason": "end_turn" }))
            }
            Ending::Failed(why) => Err(RpcError::new(
                INTERNAL_ERROR,
                format!("the turn failed: {why}"),
            )),
        }
    }

    /// Starts, follows up or resumes the codehands session, and streams its turn.
    async fn turn(&self, server: &Arc<Server>, text: String) -> Answer<Ending> {
        let runner = &server.runner;
        let current = lock(&self.state).current;
        let continued = match current {
            Some(id) => {
                let record = runner.session(&id).await.map_err(internal)?;
                match record.state {
                    SessionState::AwaitingApproval => match runner.send(&id, text.clone()).await {
                        Ok(runner_core::options::Sent::FollowUp(stream)) => Some((id, stream)),
                        Ok(runner_core::options::Sent::Steered) => {
                            return Err(RpcError::new(INTERNAL_ERROR, "the session was running"));
                        }
                        Err(e) => return Err(internal(e)),
                    },
                    SessionState::Stopped => Some((
                        id,
                        runner
                            .resume(&id, Some(text.clone()))
                            .await
                            .map_err(internal)?,
                    )),
                    SessionState::Running => {
                        return Err(RpcError::new(
                            INVALID_PARAMS,
                            format!("codehands session {id} is running a turn already"),
                        ));
                    }
                    _ => None,
                }
            }
            None => None,
        };
        let (id, stream) = match continued {
            Some(found) => found,
            None => self.start(server, text).await?,
        };
        lock(&self.state).current = Some(id);
        self.stream(server, id, stream).await
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

    /// Sends the turn's events to the client and says how it ended.
    async fn stream(
        &self,
        server: &Arc<Server>,
        id: SessionId,
        mut stream: EventStream,
    ) -> Answer<Ending> {
        let worktree = server
            .runner
            .session(&id)
            .await
            .map_err(internal)?
            .worktree_path;
        let mut updates = Updates::default();
        let mut ending = Ending::Failed("the session's events ended before the turn did".into());
        while let Some(event) = stream.next().await {
            match &event.body {
                EventBody::PermissionRequested(asked) => {
                    let (server, asked, acp_id) =
                        (server.clone(), asked.clone(), self.acp_id.clone());
                    tokio::spawn(async move { relay(&server, id, &acp_id, asked).await });
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
                server.conn.update(&self.acp_id, update);
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
        if matches!(ending, Ending::Failed(_)) {
            lock(&self.state).current = None;
        }
        Ok(ending)
    }

    /// Puts the turn's change to the client: approve (one commit on the branch), keep (a
    /// later prompt follows up) or reject (nothing left). No answer keeps it.
    async fn decide(&self, server: &Arc<Server>, branch: &str, diff: &runner_core::DiffStat) {
        let Some(id) = lock(&self.state).current else {
            return;
        };
        let call_id = format!("codehands-approval-{id}");
        let title = format!(
            "Approve the change on {branch}? {}",
            updates::diff_words(diff)
        );
        server.conn.update(
            &self.acp_id,
            json!({
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": title,
                "kind": "other",
                "status": "pending",
            }),
        );
        let asked = server
            .conn
            .request(
                "session/request_permission",
                json!({
                    "sessionId": self.acp_id,
                    "toolCall": { "toolCallId": call_id, "title": title },
                    "options": [
                        { "optionId": "approve", "name": format!("Approve: commit it on {branch}"), "kind": "allow_once" },
                        { "optionId": "keep", "name": "Keep it: a next prompt follows up", "kind": "reject_once" },
                        { "optionId": "reject", "name": "Reject: throw it away", "kind": "reject_always" },
                    ],
                }),
            )
            .await;
        let choice = asked.and_then(|reply| chosen(&reply));
        let said = match choice.as_deref() {
            Some("approve") => match server.runner.approve(&id, "").await {
                Ok(approved) => {
                    lock(&self.state).current = None;
                    format!(
                        "Approved: commit {} on {}.",
                        approved.commit, approved.branch
                    )
                }
                Err(e) => format!("The change could not be approved: {e}"),
            },
            Some("reject") => match server.runner.reject(&id).await {
                Ok(()) => {
                    lock(&self.state).current = None;
                    "Rejected: the change is gone.".to_owned()
                }
                Err(e) => format!("The change could not be rejected: {e}"),
            },
            _ => format!("Kept: codehands session {id} awaits approval; a next prompt follows up."),
        };
        server.conn.update(
            &self.acp_id,
            json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "completed",
                "content": [{ "type": "content", "content": { "type": "text", "text": said } }],
            }),
        );
        server.conn.update(
            &self.acp_id,
            updates::chunk("agent_message_chunk", &format!("\n\n{said}")),
        );
    }

    /// The client's `session/cancel`: the running turn is interrupted (its change kept), or
    /// stopped when the agent cannot be interrupted.
    pub(super) async fn cancel(&self, server: &Server) {
        let id = {
            let mut state = lock(&self.state);
            if !state.running {
                return;
            }
            state.cancelled = true;
            state.current
        };
        let Some(id) = id else { return };
        if let Err(e) = server.runner.interrupt(&id).await {
            tracing::info!(session = %id, "cannot interrupt ({e}): stopping instead");
            if let Err(e) = server.runner.stop(&id).await {
                tracing::warn!(session = %id, "cannot stop: {e}");
            }
        }
    }
}

/// Asks the client about the inner agent's permission request and gives the runner its
/// answer; no answer (the client went away, or cancelled) denies it.
async fn relay(server: &Server, id: SessionId, acp_id: &str, asked: PermissionRequested) {
    let call_id = asked
        .tool_use_id
        .clone()
        .unwrap_or_else(|| asked.request_id.clone());
    let reply = server
        .conn
        .request(
            "session/request_permission",
            json!({
                "sessionId": acp_id,
                "toolCall": {
                    "toolCallId": call_id,
                    "title": asked.tool,
                    "rawInput": asked.input,
                },
                "options": [
                    { "optionId": "allow", "name": "Allow once", "kind": "allow_once" },
                    { "optionId": "deny", "name": "Deny", "kind": "reject_once" },
                ],
            }),
        )
        .await;
    let answer = match reply.and_then(|reply| chosen(&reply)).as_deref() {
        Some("allow") => PermissionAnswer::Allow {
            updated_input: None,
        },
        _ => PermissionAnswer::Deny {
            message: Some(REFUSED.into()),
        },
    };
    if let Err(e) = server.runner.answer(&id, &asked.request_id, answer).await {
        tracing::info!(session = %id, "the answer to {} was not taken: {e}", asked.request_id);
    }
}

/// The option the client chose, if it chose one.
fn chosen(reply: &std::result::Result<Value, Value>) -> Option<String> {
    let outcome = &reply.as_ref().ok()?["outcome"];
    (outcome["outcome"] == "selected")
        .then(|| outcome["optionId"].as_str().map(str::to_owned))
        .flatten()
}
