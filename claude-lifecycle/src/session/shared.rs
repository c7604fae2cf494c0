//! The state every task of a session updates, and the one place events are sent from.

use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::{broadcast, watch};

use crate::events::{SessionEvent, SessionState};
use crate::message;
use crate::process::ExitInfo;

/// Where a session is, as of now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionStatus {
    /// The state.
    pub state: SessionState,
    /// Claude's session id, once its init line or a result has named it.
    pub session_id: Option<String>,
    /// When the process was spawned.
    pub started_at: SystemTime,
    /// When a line was last written to or read from Claude.
    pub last_activity_at: SystemTime,
    /// The exit code, once the process has exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended the process, if one did.
    pub exit_signal: Option<i32>,
}

/// How many events a listener may fall behind before it misses some (it is told how
/// many by `RecvError::Lagged`); the session itself never waits for a listener.
pub(crate) const EVENT_BUFFER: usize = 4096;

pub(crate) struct Shared {
    status: watch::Sender<SessionStatus>,
    events: broadcast::Sender<SessionEvent>,
}

impl Shared {
    pub fn new() -> Self {
        let now = SystemTime::now();
        let (status, _) = watch::channel(SessionStatus {
            state: SessionState::Starting,
            session_id: None,
            started_at: now,
            last_activity_at: now,
            exit_code: None,
            exit_signal: None,
        });
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Self { status, events }
    }

    pub fn status(&self) -> watch::Receiver<SessionStatus> {
        self.status.subscribe()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    fn emit(&self, event: SessionEvent) {
        // No listener is not an error: events are live and nobody has to listen.
        let _ = self.events.send(event);
    }

    /// Moves to `to` if the table allows it, with its event. The event is sent while the
    /// status is held, so state events reach listeners in the order the moves happened.
    pub fn move_to(&self, to: SessionState) {
        self.status.send_if_modified(|status| {
            let from = status.state;
            if !from.can_move_to(to) {
                return false;
            }
            status.state = to;
            self.emit(SessionEvent::State { from, to });
            true
        });
    }

    /// A line is about to be written; an input makes the session busy from now on (set
    /// before the write, so a quick result cannot come before it and leave it running).
    pub fn writing(&self, starts_turn: bool) {
        self.status
            .send_modify(|status| status.last_activity_at = SystemTime::now());
        if starts_turn {
            self.move_to(SessionState::Running);
        }
    }

    /// One stdout line, decoded.
    pub fn read(&self, event: SessionEvent) {
        self.status.send_modify(|status| {
            status.last_activity_at = SystemTime::now();
            let raw = match &event {
                SessionEvent::Result(result) => Some(&result.raw),
                SessionEvent::Message { raw, .. } => Some(raw),
                _ => None,
            };
            if let Some(id) = raw.and_then(message::session_id_of) {
                status.session_id = Some(id.to_owned());
            }
        });
        match event {
            SessionEvent::Result(_) => {
                self.emit(event);
                self.move_to(SessionState::Ready);
            }
            // Output after a result belongs to a turn of a queued input.
            SessionEvent::Assistant(_) | SessionEvent::Input(_) => {
                self.move_to(SessionState::Running);
                self.emit(event);
            }
            _ => self.emit(event),
        }
    }

    /// One stderr line.
    pub fn stderr(&self, line: String) {
        self.emit(SessionEvent::Stderr(line));
    }

    /// The end: the process is reaped and its output read. `closed` when the caller closed
    /// it or it exited with 0, `failed` otherwise; the state event, then `Exit`, are the last.
    pub fn ended(&self, exit: ExitInfo, by_caller: bool) {
        let to = if by_caller || exit.success() {
            SessionState::Closed
        } else {
            SessionState::Failed
        };
        self.status.send_modify(|status| {
            status.exit_code = exit.code;
            status.exit_signal = exit.signal;
            let from = status.state;
            if from.can_move_to(to) {
                status.state = to;
                self.emit(SessionEvent::State { from, to });
            }
            self.emit(SessionEvent::Exit(exit));
        });
    }
}
