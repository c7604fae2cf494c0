//! `codehands acp`: codehands as an Agent Client Protocol agent on stdio, so any ACP client
//! (an editor's agent panel) can use it. Each session is a directory of a git repo; each
//! prompt runs the chosen inner agent as a codehands session on a private worktree (the first
//! starts it, later ones are follow-ups), our events stream back as `session/update`s, the
//! inner agent's permission requests are relayed as `session/request_permission`, and at the
//! end of each turn the client is asked to approve, keep or reject, the same way.
//! `session/cancel` interrupts the turn (or stops it, for an agent that cannot be
//! interrupted); `session/load` replays a session's events from our log. A client that goes
//! away leaves its sessions kept: a running turn goes on in its supervisor and awaits approval.
//!
//! The protocol's messages are written with `serde_json` here, as `agent-acp` reads them
//! (its `wire.rs` says why not the schema crate). Only protocol messages go to stdout; logs go
//! to stderr.

mod session;
mod updates;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use clap::Args;
use runner_core::{AgentName, LocalRunner, Result};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use session::Session;

/// Arguments of `codehands acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The agent that runs each prompt (`codehands agents` lists them).
    #[arg(long, value_parser = super::agent_name, default_value = "claude-code")]
    agent: AgentName,
    /// Where each prompt's agent runs: `box` (confined to its worktree and its provider, the
    /// default) or `none` (with your rights).
    #[arg(long, value_name = "box|none", value_parser = super::isolation, default_value = "box")]
    isolation: runner_core::Isolation,
}

/// JSON-RPC's codes.
const PARSE_ERROR: i64 = -32700;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

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

    fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.send(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message },
        }));
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
    pub(super) isolation: runner_core::Isolation,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
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
    });
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = stdin.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        server.clone().take(&line);
    }
    // The client went away: its sessions are kept as they are (a running turn goes on in its
    // supervisor); what it was asked gets no answer.
    server.conn.forget_waiting();
    drop(server);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
    Ok(ExitCode::SUCCESS)
}

impl Server {
    /// One line from the client.
    fn take(self: Arc<Self>, line: &str) {
        let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(line) else {
            self.conn
                .respond_error(&Value::Null, PARSE_ERROR, "not a JSON-RPC message");
            return;
        };
        let id = message.remove("id");
        let params = message.remove("params").unwrap_or(Value::Null);
        let method = message
            .remove("method")
            .and_then(|m| m.as_str().map(str::to_owned));
        match (method, id) {
            (Some(method), Some(id)) if !id.is_null() => {
                tokio::spawn(async move {
                    match self.handle(&method, params).await {
                        Ok(result) => self.conn.respond(&id, result),
                        Err((code, why)) => self.conn.respond_error(&id, code, &why),
                    }
                });
            }
            (Some(method), _) => self.notice(&method, &params),
            (None, Some(id)) => {
                let reply = match message.remove("error") {
                    Some(error) => Err(error),
                    None => Ok(message.remove("result").unwrap_or(Value::Null)),
                };
                self.conn.take_reply(&id, reply);
            }
            (None, None) => {}
        }
    }

    /// A notification: only `session/cancel` means something here.
    fn notice(self: Arc<Self>, method: &str, params: &Value) {
        if method != "session/cancel" {
            return;
        }
        if let Some(session) = self.session_of(params) {
            tokio::spawn(async move { session.cancel(&self).await });
        }
    }

    fn session_of(&self, params: &Value) -> Option<Arc<Session>> {
        let id = params.get("sessionId")?.as_str()?;
        lock(&self.sessions).get(id).cloned()
    }

    /// A request: its result, or an error code and what went wrong.
    async fn handle(
        self: &Arc<Self>,
        method: &str,
        params: Value,
    ) -> std::result::Result<Value, (i64, String)> {
        match method {
            "initialize" => Ok(json!({
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
            "authenticate" => Ok(json!({})),
            "session/new" => {
                let repo = cwd(&params)?;
                let session = Arc::new(Session::new(runner_core::SessionId::new_random(), repo));
                let id = session.acp_id.clone();
                lock(&self.sessions).insert(id.clone(), session);
                Ok(json!({ "sessionId": id }))
            }
            "session/load" => {
                let repo = cwd(&params)?;
                let id = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .and_then(|id| runner_core::SessionId::parse(id).ok())
                    .ok_or((
                        INVALID_PARAMS,
                        "sessionId is not a codehands session id".into(),
                    ))?;
                let session = Arc::new(Session::loaded(id, repo, self).await?);
                lock(&self.sessions).insert(session.acp_id.clone(), session);
                Ok(json!({}))
            }
            "session/prompt" => {
                let session = self.session_of(&params).ok_or((
                    INVALID_PARAMS,
                    "no such session: open one with session/new or session/load first".into(),
                ))?;
                session.prompt(self, &params).await
            }
            other => Err((
                METHOD_NOT_FOUND,
                format!("codehands does not serve {other}"),
            )),
        }
    }
}

/// The session's folder: an absolute path that is a directory.
fn cwd(params: &Value) -> std::result::Result<std::path::PathBuf, (i64, String)> {
    let cwd = params
        .get("cwd")
        .and_then(Value::as_str)
        .map(std::path::PathBuf::from)
        .ok_or((INVALID_PARAMS, "cwd is missing".to_owned()))?;
    if !cwd.is_absolute() || !cwd.is_dir() {
        return Err((
            INVALID_PARAMS,
            format!("cwd {} is not an absolute path to a folder", cwd.display()),
        ));
    }
    Ok(cwd)
}

/// An error of the runner as a JSON-RPC error.
pub(super) fn internal(e: runner_core::Error) -> (i64, String) {
    (INTERNAL_ERROR, e.to_string())
}
