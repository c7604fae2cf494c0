//! `codehands acp`: codehands as an Agent Client Protocol agent on stdio, so any ACP client
//! (an editor's agent panel) can use it. Each session is a directory of a git repo; each
//! prompt runs the chosen inner agent as a codehands session on a private worktree (the first
//! starts it, later ones are follow-ups), our events stream back as `session/update`s, the
//! inner agent's permission requests are relayed as `session/request_permission`, and at the
//! end of each turn the client is asked to approve, keep or reject, the same way.
//! `session/cancel` interrupts the turn (or stops it, for an agent that cannot be
//! interrupted); `session/load` replays a session's events from our log. A client that goes
//! away leaves its sessions kept: a running turn goes on in its supervisor and awaits approval.
//! The connection reads bytes, not text (`codehands::client_lines`): a line that is no
//! message is answered with a parse error and the next one is read; only the end of stdin
//! ends the server. A session's folder is checked when the session is made.
//!
//! The protocol's messages are written with `serde_json` here, as `agent-acp` reads them
//! (its `wire.rs` says why not the schema crate). Only protocol messages go to stdout; logs go
//! to stderr.

mod ask;
mod session;
mod updates;

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use clap::Args;
use codehands::acp_wire::{self, Call, INTERNAL_ERROR, INVALID_PARAMS, Incoming, RpcError};
use codehands::client_lines::{ClientLines, Frame};
use runner_contract::{AgentName, Result};
use runner_core::LocalRunner;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use session::{Session, TurnSignals};

/// Arguments of `codehands acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The agent that runs each prompt (`codehands agents` lists them).
    #[arg(long, value_parser = super::agent_name, default_value = "claude-code")]
    agent: AgentName,
    /// Where each prompt's agent runs: `box` (confined to its worktree and its provider, the
    /// default) or `none` (with your rights).
    #[arg(long, value_name = "box|none", value_parser = super::isolation, default_value = "box")]
    isolation: runner_contract::Isolation,
}

/// An answer to a request: its result, or the error that answers it.
type Answer<T> = std::result::Result<T, RpcError>;

/// A reply of the client to one of our requests: its result, or its error.
type Reply = std::result::Result<Value, Value>;

/// The line-level side of the connection: one writer, our requests waiting for replies.
pub(super) struct Connection {
    out: mpsc::UnboundedSender<String>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: AtomicU64,
}

impl Connection {
    fn send(&self, message: Value) {
        let _ = self.out.send(message.to_string());
    }

    fn respond(&self, id: &Value, result: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    fn respond_error(&self, id: &Value, error: &RpcError) {
        let _ = self.out.send(error.reply_line(id));
    }

    /// Sends one `session/update` notification.
    pub(super) fn update(&self, session_id: &str, update: Value) {
        self.send(json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": { "sessionId": session_id, "update": update },
        }));
    }

    /// Asks the client; `None` when it went away before replying.
    pub(super) async fn request(&self, method: &str, params: Value) -> Option<Reply> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        rx.await.ok()
    }

    fn take_reply(&self, id: &Value, reply: Reply) {
        let waiting = id.as_u64().and_then(|id| lock(&self.waiting).remove(&id));
        if let Some(waiting) = waiting {
            let _ = waiting.send(reply);
        }
    }

    /// Every request still waiting gets no reply: the client went away.
    fn forget_waiting(&self) {
        lock(&self.waiting).clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the server shares with its prompts.
pub(super) struct Server {
    pub(super) conn: Arc<Connection>,
    pub(super) runner: Arc<LocalRunner>,
    pub(super) agent: AgentName,
    /// The isolation of every session this server starts.
    pub(super) isolation: runner_contract::Isolation,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The turns of prompts answered `cancelled` that are still being stopped: the server
    /// waits for them before it exits, so their inner agents are surely stopped.
    pub(super) winding_down: Mutex<Vec<tokio::task::JoinHandle<Answer<Value>>>>,
}

/// Serves ACP on stdin and stdout until the client closes stdin.
pub async fn run(args: AcpArgs) -> Result<ExitCode> {
    let runner = Arc::new(super::runner_for(&args.agent)?);
    let (out, mut lines) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = lines.recv().await {
            let written = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if written.await.is_err() {
                return;
            }
        }
    });
    let server = Arc::new(Server {
        conn: Arc::new(Connection {
            out,
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        }),
        runner,
        agent: args.agent,
        isolation: args.isolation,
        sessions: Mutex::new(HashMap::new()),
        winding_down: Mutex::new(Vec::new()),
    });
    // Bytes, not text: a line that is not UTF-8, not JSON or over the cap is answered with
    // a parse error and the next line is read; only the end of stdin ends the loop.
    let mut stdin = ClientLines::new(tokio::io::stdin(), acp_wire::MAX_LINE);
    while let Some(frame) = stdin.next().await {
        server.clone().take(&frame);
    }
    // The client went away: its sessions are kept as they are (a running turn goes on in its
    // supervisor); what it was asked gets no answer.
    server.conn.forget_waiting();
    // Cancelled turns still winding down end within the stop's grace: wait for them (a
    // turn the client simply left goes on in its supervisor).
    let winding: Vec<_> = std::mem::take(&mut *lock(&server.winding_down));
    let limit = session::STOP_GRACE + std::time::Duration::from_secs(10);
    let _ = tokio::time::timeout(limit, futures::future::join_all(winding)).await;
    drop(server);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    Ok(ExitCode::SUCCESS)
}

impl Server {
    /// One line from the client.
    fn take(self: Arc<Self>, frame: &Frame) {
        match acp_wire::decode(frame) {
            Incoming::Unreadable(error) => self.conn.respond_error(&Value::Null, &error),
            Incoming::Request {
                id,
                call: Err(error),
            } => self.conn.respond_error(&id, &error),
            Incoming::Request { id, call: Ok(call) } => {
                // A prompt is taken in now, in the order of the client's lines, so that a
                // cancel on the very next line finds it.
                let begun = match &call {
                    Call::Prompt { session_id, .. } => match self.begin_prompt(session_id) {
                        Ok(begun) => Some(begun),
                        Err(error) => return self.conn.respond_error(&id, &error),
                    },
                    _ => None,
                };
                tokio::spawn(async move {
                    match self.handle(call, begun).await {
                        Ok(result) => self.conn.respond(&id, result),
                        Err(error) => self.conn.respond_error(&id, &error),
                    }
                });
            }
            Incoming::Cancel { session_id } => {
                if let Some(session) = self.session(&session_id) {
                    session.cancel();
                }
            }
            Incoming::Reply { id, reply } => self.conn.take_reply(&id, reply),
            Incoming::Ignored => {}
        }
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// Takes a prompt of session `id` in (see [`Session::begin`]).
    fn begin_prompt(&self, id: &str) -> Answer<(Arc<Session>, TurnSignals)> {
        let session = self.session(id).ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                "no such session: open one with session/new or session/load first",
            )
        })?;
        let signals = session.begin()?;
        Ok((session, signals))
    }

    /// A request (a prompt taken in as `begun`): its result, or the error that answers it.
    async fn handle(
        self: &Arc<Self>,
        call: Call,
        begun: Option<(Arc<Session>, TurnSignals)>,
    ) -> Answer<Value> {
        match call {
            Call::Initialize => Ok(json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": { "image": false, "audio": false, "embeddedContext": false },
                },
                "authMethods": [],
                "agentInfo": {
                    "name": "codehands",
                    "title": "codehands",
                    "version": env!("CARGO_PKG_VERSION"),
                },
            })),
            Call::Authenticate => Ok(json!({})),
            Call::NewSession { cwd } => {
                // Checked now, not at the first prompt: a client shows a session it was given
                // as one that works.
                self.check_folder(&cwd).await?;
                let session = Arc::new(Session::new(runner_contract::SessionId::new_random(), cwd));
                let id = session.acp_id.clone();
                lock(&self.sessions).insert(id.clone(), session);
                Ok(json!({ "sessionId": id }))
            }
            Call::LoadSession { session_id, cwd } => {
                let session = Session::loaded(session_id, cwd, self).await?;
                lock(&self.sessions).insert(session.acp_id.clone(), session);
                Ok(json!({}))
            }
            Call::Prompt { text, .. } => {
                let Some((session, signals)) = begun else {
                    return Err(RpcError::new(INTERNAL_ERROR, "the prompt was not taken in"));
                };
                session.prompt(self, text, signals).await
            }
        }
    }

    /// Refuses a folder no session can start in, with the words a start refuses it with
    /// (nothing is made): it must exist, be a git repo with a commit, and be outside
    /// codehands' home.
    pub(super) async fn check_folder(&self, cwd: &Path) -> Answer<()> {
        if !cwd.is_dir() {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "{} does not exist or is not a folder: open the session in the folder of a \
                     git repo that has at least one commit",
                    cwd.display()
                ),
            ));
        }
        self.runner
            .check_repo(cwd)
            .await
            .map_err(|e| RpcError::new(INVALID_PARAMS, e.to_string()))?;
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        let home = self.runner.home().root();
        if real(cwd).starts_with(real(home)) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "{} is inside codehands' home {}, where codehands keeps its own worktrees \
                     and records: open the session in your repository instead",
                    cwd.display(),
                    home.display()
                ),
            ));
        }
        Ok(())
    }
}

/// An error of the runner as a JSON-RPC error.
pub(super) fn internal(e: runner_contract::Error) -> RpcError {
    RpcError::new(INTERNAL_ERROR, e.to_string())
}
