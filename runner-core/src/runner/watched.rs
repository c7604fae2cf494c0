//! The agent a supervisor watches: the child it spawned, or one it adopted.

use std::time::Duration;

use tokio::time::Instant;

use runner_process::detached::DetachedAgent;
use runner_process::tree::{self, ProcessIdentity};

/// The longest pause between looks at an agent or a file that has nothing new.
pub(super) const POLL_MAX: Duration = Duration::from_millis(4);
/// The first pause after something new came.
const POLL_MIN: Duration = Duration::from_millis(1);

/// The pause between looks at a file that grows: short right after it grew, doubling up to
/// [`POLL_MAX`] while nothing comes (the supervisor's output file and a follower's log).
pub(super) struct Backoff(Duration);

impl Backoff {
    /// Starting short.
    pub(super) fn new() -> Self {
        Self(POLL_MIN)
    }

    /// Something came: look again soon.
    pub(super) fn reset(&mut self) {
        self.0 = POLL_MIN;
    }

    /// Waits, and waits longer next time.
    pub(super) async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(POLL_MAX);
    }
}

/// The agent a supervisor watches: its own child, or one adopted from a supervisor that
/// went away (not our child: its exit code is known only if its parent kept it).
pub(super) enum Watched {
    /// Spawned by this supervisor.
    Child(Box<DetachedAgent>),
    /// Left running by a supervisor that went away.
    Adopted {
        /// The agent.
        agent: ProcessIdentity,
        /// The `cat` carrying its stdout to the file, when recorded.
        relay: Option<ProcessIdentity>,
        /// The `tail -f` feeding a conversation's stdin, when there is one.
        input_relay: Option<ProcessIdentity>,
    },
}

impl Watched {
    pub(super) fn identity(&self) -> ProcessIdentity {
        match self {
            Self::Child(child) => child.identity(),
            Self::Adopted { agent, .. } => *agent,
        }
    }

    /// `Some(exit code)` once the agent has exited and all it wrote is in the output file.
    pub(super) fn exited(&mut self) -> Option<Option<i32>> {
        match self {
            Self::Child(child) => {
                let code = child.try_exit()?.code();
                child.output_complete().then_some(code)
            }
            Self::Adopted { agent, relay, .. } => {
                let done = !agent.is_alive() && relay.is_none_or(|r| !r.is_alive());
                done.then_some(None)
            }
        }
    }

    /// Whether the relay carrying the agent's output to its file failed (a full disk): what
    /// the agent printed after that is lost, and its last line in the file is cut short.
    /// Known only for our own child.
    pub(super) fn output_failed(&mut self) -> bool {
        match self {
            Self::Child(child) => child.relay_failed(),
            Self::Adopted { .. } => false,
        }
    }

    pub(super) async fn end_tree(&mut self, grace: Duration) {
        match self {
            Self::Child(child) => child.end_tree(grace).await,
            Self::Adopted { agent, .. } => {
                tree::end_group(agent, grace).await;
            }
        }
    }

    pub(super) fn close_stdin(&mut self) {
        match self {
            Self::Child(child) => child.close_stdin(),
            Self::Adopted { input_relay, .. } => {
                if let Some(relay) = input_relay.take() {
                    tree::kill_group(&relay);
                }
            }
        }
    }

    /// Whether the agent reads a conversation's input file (its stdin stays open for input).
    pub(super) fn converses(&self) -> bool {
        match self {
            Self::Child(child) => child.input_relay_identity().is_some(),
            Self::Adopted { input_relay, .. } => input_relay.is_some(),
        }
    }

    /// Waits up to `limit` for the exit; `None` when the agent is still running then.
    pub(super) async fn wait_exit(&mut self, limit: Duration) -> Option<Option<i32>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(code) = self.exited() {
                return Some(code);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(POLL_MAX).await;
        }
    }
}

/// A wait as a person reads it in a message (`1m 30s`), never under a second.
pub(super) fn human(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs().max(1))).to_string()
}
