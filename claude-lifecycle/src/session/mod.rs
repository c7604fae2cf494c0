//! Persistent sessions: one Claude process, inputs over time, events as they come.

mod shared;
mod tasks;

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::events::{SessionEvent, SessionState};
use crate::message;
use crate::options::{ResolvedConfig, check_text};
use crate::process::{self, ExitInfo};
pub use shared::SessionStatus;
use shared::Shared;

/// A running Claude Code process that takes inputs on stdin and reports what it prints.
///
/// Dropping a session closes it as [`Session::close`] does, in the background.
pub struct Session {
    config: ResolvedConfig,
    inputs: mpsc::UnboundedSender<tasks::Write>,
    /// Set by `close`; dropping it (with the session) is a close too.
    closing: watch::Sender<bool>,
    status: watch::Receiver<SessionStatus>,
    shared: Arc<Shared>,
    /// Subscribed before the process could print anything, for the first subscriber.
    first_events: Mutex<Option<broadcast::Receiver<SessionEvent>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("program", &self.config.program)
            .field("status", &*self.status.borrow())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Spawns `config` and starts its tasks; returns once the process is spawned.
    pub(crate) fn start(config: ResolvedConfig) -> Result<Self> {
        let shared = Arc::new(Shared::new());
        let first_events = shared.subscribe();
        let spawned = process::spawn(&config)?;
        // Ready before any task runs, so no output can move the state first.
        shared.move_to(SessionState::Ready);
        let (inputs, queue) = mpsc::unbounded_channel();
        let (closing, closing_rx) = watch::channel(false);
        let owner = spawned.owner;
        let writer = tasks::writer(
            spawned.stdin,
            queue,
            closing_rx.clone(),
            owner.clone(),
            shared.clone(),
        );
        let readers = vec![
            tasks::stdout_reader(spawned.stdout, shared.clone()),
            tasks::stderr_reader(spawned.stderr, shared.clone()),
        ];
        tasks::supervisor(
            owner,
            closing_rx,
            writer,
            readers,
            config.shutdown_grace,
            shared.clone(),
        );
        Ok(Self {
            config,
            inputs,
            closing,
            status: shared.status(),
            shared,
            first_events: Mutex::new(Some(first_events)),
        })
    }

    /// Writes `text` to Claude as one user message, and gives the uuid it carries (its
    /// replay, [`SessionEvent::Input`], and the result that covers it name the same uuid).
    /// The input is queued when this is called, so concurrent sends go out in the order
    /// they were made; the future resolves once the line is written to stdin, not when
    /// Claude answers: listen for [`SessionEvent::Result`] for that. An input sent during a
    /// turn steers it: Claude adds it to the running turn after the next tool result, or
    /// runs it as the next turn when the turn has no tool call left.
    ///
    /// Fails with [`Error::Closed`] once the session is closing or has ended (also for
    /// inputs still queued when `close` was called), [`Error::InvalidInput`] for an empty
    /// text, [`Error::Write`] when the pipe is broken.
    pub fn send(&self, text: &str) -> impl Future<Output = Result<Uuid>> + Send + use<> {
        let queued = check_text(text, "input").and_then(|()| {
            let uuid = Uuid::new_v4();
            let line = message::user_line(text, Some(uuid));
            self.enqueue(line, true).map(|written| (uuid, written))
        });
        async move {
            let (uuid, written) = queued?;
            written.await.map(|()| uuid)
        }
    }

    /// Asks Claude to stop the running turn (a `control_request` of subtype `interrupt`,
    /// written in order with the inputs). Claude ends the turn with a result that is not
    /// ok and stays ready for the next input; with no turn running it only answers the
    /// request. Resolves once the request is written. Fails as [`Session::send`] does.
    pub fn interrupt(&self) -> impl Future<Output = Result<()>> + Send + use<> {
        let queued = self.enqueue(message::interrupt_line(Uuid::new_v4()), false);
        async move { queued?.await }
    }

    /// Queues a line for the writer; the future resolves once it is written.
    fn enqueue(
        &self,
        line: Vec<u8>,
        starts_turn: bool,
    ) -> Result<impl Future<Output = Result<()>> + Send + use<>> {
        if *self.closing.borrow() || self.status.borrow().state.is_final() {
            return Err(Error::Closed);
        }
        let (reply, written) = oneshot::channel();
        self.inputs
            .send(tasks::Write {
                line,
                starts_turn,
                reply,
            })
            .map_err(|_| Error::Closed)?;
        // A writer gone without answering means the session ended.
        Ok(async move { written.await.unwrap_or(Err(Error::Closed)) })
    }

    /// The session's events from now on. The first call also gets every event since the
    /// spawn; later calls only what happens after them. Events are never replayed: a
    /// listener that falls more than 4096 events behind is told it lagged and misses them.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        let first = self
            .first_events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        first.unwrap_or_else(|| self.shared.subscribe())
    }

    /// Where the session is now.
    pub fn status(&self) -> SessionStatus {
        self.status.borrow().clone()
    }

    /// The state now.
    pub fn state(&self) -> SessionState {
        self.status.borrow().state
    }

    /// Claude's session id, once its output has named it (pass it to `resume_session_id`).
    pub fn session_id(&self) -> Option<String> {
        self.status.borrow().session_id.clone()
    }

    /// A copy of what the session was started with.
    pub fn config(&self) -> &ResolvedConfig {
        &self.config
    }

    /// Waits for the process to end by itself (it does when Claude exits or its stdin is
    /// closed) and its output to be read, without closing anything.
    pub async fn wait(&self) -> ExitInfo {
        let mut status = self.status.clone();
        let ended = status
            .wait_for(|s| s.state.is_final())
            .await
            .map(|s| ExitInfo {
                code: s.exit_code,
                signal: s.exit_signal,
            });
        // The sender lives in `shared`, which this session holds: it cannot be gone.
        ended.unwrap_or_default()
    }

    /// Closes the session: refuses inputs still queued and any sent later, ends stdin,
    /// waits the grace period, sends SIGTERM, then SIGKILL after another grace period.
    /// Returns once the process is reaped and its output read (reading after the exit is
    /// bounded by the same grace). Results may still arrive while it waits. Idempotent:
    /// every call returns the same exit.
    pub async fn close(&self) -> ExitInfo {
        self.closing.send_replace(true);
        self.wait().await
    }
}
