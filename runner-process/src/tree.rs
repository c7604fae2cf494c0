//! Ending an agent's whole process tree, and knowing a process by its start time.
//!
//! Every agent runs as the leader of its own process group, so its children
//! (`agent → npm test → node`) share the group and one signal reaches them all.
//! A pid alone is not an identity: pids are reused. We keep the pid together with
//! its start time from `/proc/<pid>/stat` and never signal a pid whose start time
//! differs.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// A process, known by pid and start time (clock ticks since boot, from `/proc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcessIdentity {
    /// The pid (also the process group id for an agent, which leads its group).
    pub pid: u32,
    /// Field 22 of `/proc/<pid>/stat`.
    pub start_time: u64,
}

impl ProcessIdentity {
    /// The identity of a live process, or `None` when it is gone.
    pub fn of(pid: u32) -> Option<Self> {
        let stat = read_stat(pid)?;
        Some(Self {
            pid,
            start_time: stat.start_time,
        })
    }

    /// The identity of this process.
    pub fn current() -> Option<Self> {
        Self::of(std::process::id())
    }

    /// Whether this very process is still alive (same pid, same start time, not a zombie).
    pub fn is_alive(&self) -> bool {
        read_stat(self.pid).is_some_and(|s| s.start_time == self.start_time && !s.dead)
    }
}

struct Stat {
    pgrp: u32,
    session: u32,
    start_time: u64,
    dead: bool,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces or ')': fields follow the last ')'.
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    // After the name: [0] state (field 3), [2] pgrp (field 5), [19] starttime (field 22).
    Some(Stat {
        dead: matches!(*fields.first()?, "Z" | "X" | "x"),
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// A live process that leads a session of its own and works in `cwd`: how an agent spawned
/// by a supervisor that died before it could record the pid is found again.
pub fn find_session_leader_in(cwd: &std::path::Path) -> Option<ProcessIdentity> {
    let entries = std::fs::read_dir("/proc").ok()?;
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find_map(|pid| {
            let stat = read_stat(pid)?;
            let leads = stat.session == pid && !stat.dead;
            (leads && std::fs::read_link(format!("/proc/{pid}/cwd")).ok()? == cwd).then_some(
                ProcessIdentity {
                    pid,
                    start_time: stat.start_time,
                },
            )
        })
}

/// Whether any live (not zombie) process is still in process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    // The kernel answers "no such group" at once; that is the usual case when a run
    // ends, and it spares a read of every `/proc/<pid>/stat` on the machine.
    if pgid == 0 || killpg(Pid::from_raw(pgid as i32), None) == Err(nix::errno::Errno::ESRCH) {
        return false;
    }
    // Some member exists; it may only be a zombie, which only `/proc` tells.
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| read_stat(pid).is_some_and(|s| s.pgrp == pgid && !s.dead))
}

/// Sends `signal` to the group led by `leader`, but only while the leader is the
/// same process (or has exited leaving its group behind, which keeps its id from reuse).
fn signal_group(leader: &ProcessIdentity, signal: Signal) -> bool {
    if let Some(now) = read_stat(leader.pid)
        && now.start_time != leader.start_time
    {
        // The pid belongs to another process now: never signal it.
        return false;
    }
    killpg(Pid::from_raw(leader.pid as i32), signal).is_ok()
}

/// SIGKILLs the group of `leader` at once (a relay of ours, which holds nothing to save);
/// whether a signal was sent.
pub fn kill_group(leader: &ProcessIdentity) -> bool {
    signal_group(leader, Signal::SIGKILL)
}

/// Ends the whole group of `leader`: SIGTERM, then SIGKILL after `grace` for
/// whatever ignored it. Returns once no live process is left in the group, or
/// after a bounded wait. Returns whether a signal was sent at all.
pub async fn end_group(leader: &ProcessIdentity, grace: Duration) -> bool {
    if !group_alive(leader.pid) {
        return false;
    }
    let sent = signal_group(leader, Signal::SIGTERM);
    if !sent {
        return false;
    }
    if wait_until_gone(leader.pid, grace).await {
        return true;
    }
    signal_group(leader, Signal::SIGKILL);
    wait_until_gone(leader.pid, Duration::from_secs(5)).await;
    true
}

async fn wait_until_gone(pgid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_itself() {
        let me = ProcessIdentity::current().unwrap();
        assert!(me.is_alive());
        let impostor = ProcessIdentity {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(
            !impostor.is_alive(),
            "another start time is another process"
        );
    }

    #[tokio::test]
    async fn ends_a_group_whose_members_ignore_sigterm() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "trap '' TERM; (trap '' TERM; sleep 60) & sleep 60"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let leader = ProcessIdentity::of(pid).unwrap();
        let reaper = tokio::spawn(async move { child.wait().await });
        assert!(end_group(&leader, Duration::from_millis(200)).await);
        assert!(!group_alive(pid));
        reaper.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_group_of_only_zombies_is_not_alive() {
        // The leader has exited but is not reaped yet: the kernel still knows the group.
        let mut child = tokio::process::Command::new("true")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while read_stat(pid).is_some_and(|s| !s.dead) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            killpg(Pid::from_raw(pid as i32), None).is_ok(),
            "the zombie keeps its group"
        );
        assert!(!group_alive(pid), "a zombie is not a live process");
        child.wait().await.unwrap();
        assert!(!group_alive(pid), "a group with nobody left is not alive");
    }

    #[test]
    fn a_live_group_is_alive() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(group_alive(pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!group_alive(pid));
    }

    #[tokio::test]
    async fn never_signals_a_pid_with_another_start_time() {
        let mut child = tokio::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let real = ProcessIdentity::of(pid).unwrap();
        let stale = ProcessIdentity {
            start_time: real.start_time.wrapping_sub(1),
            ..real
        };
        assert!(!end_group(&stale, Duration::from_millis(50)).await);
        assert!(real.is_alive(), "the process was left alone");
        assert!(end_group(&real, Duration::from_millis(500)).await);
        child.wait().await.unwrap();
    }
}
