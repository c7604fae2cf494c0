//! The outer process's watchdog: it ends a box whose init no longer ends it.
//!
//! The init ends the box when its agent exits. An init that is stopped (`SIGSTOP` from
//! outside, or traced: the state `T` or `t` in `/proc/<init>/stat`) or hung never does,
//! and the turn would stay "running" with no agent alive. The outer process watches the
//! init from outside, where nothing in the box reaches: when the init stays stopped for
//! [`STOPPED_FOR`], or outlives its agent (its first child) by [`OUTLIVES_AGENT_BY`], the
//! watchdog kills the init and bubblewrap's process group, and the outer exits with
//! [`WATCHDOG_EXIT`] and a line on stderr that says which.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// The exit code of a box the watchdog ended (as `timeout` says when it ended a command).
pub const WATCHDOG_EXIT: i32 = 124;

/// How long the init may stay stopped or traced.
pub const STOPPED_FOR: Duration = Duration::from_secs(3);

/// How long the init may outlive its agent (it normally exits at once).
pub const OUTLIVES_AGENT_BY: Duration = Duration::from_secs(5);

/// How often the watchdog looks.
const EVERY: Duration = Duration::from_millis(250);

/// Why the watchdog ended a box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The init stayed stopped or traced.
    InitStopped,
    /// The agent exited and the init did not follow.
    InitOutlivedAgent,
}

impl Verdict {
    /// The line the outer process writes on stderr.
    pub fn message(self) -> String {
        match self {
            Self::InitStopped => format!(
                "codehands box: the box's init was stopped or traced for {} s (by SIGSTOP or a \
                 debugger), so the box could not end on its own: the box was ended; run the \
                 turn again",
                STOPPED_FOR.as_secs()
            ),
            Self::InitOutlivedAgent => format!(
                "codehands box: the agent exited but the box's init did not end the box within \
                 {} s: the box was ended",
                OUTLIVES_AGENT_BY.as_secs()
            ),
        }
    }
}

/// What the watchdog sees of a process at one look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Its state letter (`R`, `S`, `T`, `t`, `Z` …).
    pub state: char,
    /// When it started, in clock ticks after boot: tells it from a later process of the
    /// same pid.
    pub start: u64,
}

/// The watchdog's memory between looks.
#[derive(Debug, Default)]
pub struct Watch {
    stopped_since: Option<Instant>,
    agent: Option<(u32, u64)>,
    agent_gone_since: Option<Instant>,
}

impl Watch {
    /// One look at `now`: the init's state, and the agent's pid and state when known
    /// (`agent_seen` is `None` when no process has that pid and start any more).
    pub fn step(
        &mut self,
        now: Instant,
        init: Option<Seen>,
        agent: Option<(u32, Option<Seen>)>,
    ) -> Option<Verdict> {
        let init = init?;
        if matches!(init.state, 'T' | 't') {
            let since = *self.stopped_since.get_or_insert(now);
            if now.duration_since(since) >= STOPPED_FOR {
                return Some(Verdict::InitStopped);
            }
        } else {
            self.stopped_since = None;
        }
        if let Some((pid, seen)) = agent {
            let known = *self.agent.get_or_insert((pid, seen.map_or(0, |s| s.start)));
            let alive = seen
                .is_some_and(|s| (pid, s.start) == known && !matches!(s.state, 'Z' | 'X' | 'x'));
            if alive {
                self.agent_gone_since = None;
            } else {
                let since = *self.agent_gone_since.get_or_insert(now);
                if now.duration_since(since) >= OUTLIVES_AGENT_BY {
                    return Some(Verdict::InitOutlivedAgent);
                }
            }
        }
        None
    }

    /// The agent's pid, once seen.
    pub fn agent(&self) -> Option<u32> {
        self.agent.map(|(pid, _)| pid)
    }
}

/// A process's state and start, from `/proc/<pid>/stat`.
pub fn seen(pid: u32) -> Option<Seen> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// The state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line; the name
/// (field 2, in parentheses) may hold anything, so fields count from its last `)`.
pub fn parse_stat(stat: &str) -> Option<Seen> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Seen {
        state: fields.first()?.chars().next()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// What the outer process and its watchdog share.
#[derive(Debug, Default)]
pub struct Shared {
    /// Set by the outer process when bubblewrap has ended: the watchdog stops.
    pub done: AtomicBool,
    /// Set by the watchdog before it ends the box.
    pub verdict: OnceLock<Verdict>,
}

/// Watches the box of bubblewrap `bwrap` (whose child is the init) until `shared.done`;
/// ends it when the init no longer can, its verdict recorded first (the outer process
/// reads it once bubblewrap has ended, without waiting for this thread).
pub fn watch(bwrap: u32, shared: &Shared) {
    let mut watch = Watch::default();
    while !shared.done.load(Ordering::Relaxed) {
        std::thread::sleep(EVERY);
        let Some(init) = crate::outer::child_of(bwrap) else {
            continue;
        };
        let agent = watch
            .agent()
            .or_else(|| crate::outer::child_of(init))
            .map(|pid| (pid, seen(pid)));
        if shared.done.load(Ordering::Relaxed) {
            return;
        }
        if let Some(verdict) = watch.step(Instant::now(), seen(init), agent) {
            let _ = shared.verdict.set(verdict);
            // SIGKILL reaches a stopped or traced process; the init's end ends every
            // process of its pid namespace, and bubblewrap's group goes with it.
            let _ = kill(Pid::from_raw(init as i32), Signal::SIGKILL);
            let _ = killpg(Pid::from_raw(bwrap as i32), Signal::SIGKILL);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    fn state(state: char) -> Option<Seen> {
        Some(Seen { state, start: 100 })
    }

    #[test]
    fn a_stopped_init_is_ended_after_its_grace() {
        let t0 = Instant::now();
        let mut watch = Watch::default();
        assert_eq!(watch.step(t0, state('T'), None), None);
        assert_eq!(watch.step(at(t0, 2000), state('T'), None), None);
        assert_eq!(
            watch.step(at(t0, 3000), state('T'), None),
            Some(Verdict::InitStopped)
        );
    }

    #[test]
    fn a_traced_init_counts_as_stopped() {
        let t0 = Instant::now();
        let mut watch = Watch::default();
        watch.step(t0, state('t'), None);
        assert_eq!(
            watch.step(at(t0, 3500), state('t'), None),
            Some(Verdict::InitStopped)
        );
    }

    #[test]
    fn an_init_stopped_a_moment_is_forgiven() {
        let t0 = Instant::now();
        let mut watch = Watch::default();
        watch.step(t0, state('T'), None);
        watch.step(at(t0, 2000), state('S'), None);
        assert_eq!(watch.step(at(t0, 2500), state('T'), None), None);
        assert_eq!(watch.step(at(t0, 4000), state('T'), None), None);
    }

    #[test]
    fn an_init_that_outlives_its_agent_is_ended() {
        let t0 = Instant::now();
        let mut watch = Watch::default();
        assert_eq!(watch.step(t0, state('S'), Some((7, state('R')))), None);
        // Exited, not yet reaped: a zombie.
        assert_eq!(
            watch.step(at(t0, 1000), state('S'), Some((7, state('Z')))),
            None
        );
        assert_eq!(watch.step(at(t0, 5000), state('S'), Some((7, None))), None);
        assert_eq!(
            watch.step(at(t0, 6000), state('S'), Some((7, None))),
            Some(Verdict::InitOutlivedAgent)
        );
    }

    #[test]
    fn a_later_process_with_the_agents_pid_is_not_the_agent() {
        let t0 = Instant::now();
        let mut watch = Watch::default();
        watch.step(t0, state('S'), Some((7, state('S'))));
        let other = Some(Seen {
            state: 'S',
            start: 999,
        });
        watch.step(at(t0, 100), state('S'), Some((7, other)));
        assert_eq!(
            watch.step(at(t0, 5200), state('S'), Some((7, other))),
            Some(Verdict::InitOutlivedAgent)
        );
    }

    #[test]
    fn a_running_box_is_left_alone() {
        let t0 = Instant::now();
        let mut watch = Watch::default();
        for s in 0..100 {
            assert_eq!(
                watch.step(at(t0, s * 1000), state('S'), Some((7, state('R')))),
                None
            );
        }
    }

    #[test]
    fn no_init_yet_is_no_verdict() {
        let mut watch = Watch::default();
        assert_eq!(watch.step(Instant::now(), None, None), None);
    }

    #[test]
    fn stat_lines_read_with_any_name() {
        let line = "42 (a) b) c) T 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Seen {
                state: 'T',
                start: 12345
            })
        );
        let own = seen(std::process::id()).unwrap();
        assert!(matches!(own.state, 'R' | 'S'));
        assert!(own.start > 0);
    }
}
