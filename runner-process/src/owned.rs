//! A child owned until it is reaped: Claude Code under `claude-lifecycle`, which keeps the
//! seed's process model rather than the runner's (ARCHITECTURE.md, "claude-lifecycle"): the
//! caller's environment plus an overlay, the caller's process group, its three pipes handed
//! to the caller, and only the parent process ever signalled (its descendants are its own
//! business).
//!
//! One task owns the `Child`: a signal is sent by that task, and only while the child is not
//! yet reaped, so a pid the kernel has given to another process is never signalled.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::Serialize;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, watch};

/// How a process ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitInfo {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it (15 SIGTERM, 9 SIGKILL …), when one did.
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// True for exit code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// What to start: the program, its arguments, the variables set on top of this process's
/// environment, and the folder (this process's when `None`).
#[derive(Debug, Clone, Copy)]
pub struct OwnedCommand<'a> {
    /// A path, or a name looked up on PATH.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Set on top of this process's environment.
    pub env: &'a [(String, String)],
    /// The folder it runs in.
    pub cwd: Option<&'a Path>,
}

/// A started child with its pipes taken apart.
#[derive(Debug)]
pub struct OwnedChild {
    /// The handle of the task that owns the child.
    pub owner: Owner,
    /// Its stdin.
    pub stdin: ChildStdin,
    /// Its stdout.
    pub stdout: ChildStdout,
    /// Its stderr.
    pub stderr: ChildStderr,
}

/// Starts `command` with its three pipes, owned by a task of the current tokio runtime. It
/// is killed if everything is dropped mid-run (a runtime shut down): no child is left running
/// without a reader.
pub fn spawn(command: OwnedCommand<'_>) -> std::io::Result<OwnedChild> {
    let mut spawn = tokio::process::Command::new(command.program);
    spawn
        .args(command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = command.cwd {
        spawn.current_dir(cwd);
    }
    let mut child = spawn.spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three pipes were asked for");
    };
    Ok(OwnedChild {
        owner: Owner::watch(child),
        stdin,
        stdout,
        stderr,
    })
}

/// The handle of the task that owns the child: signals go through it, the exit comes out.
#[derive(Debug, Clone)]
pub struct Owner {
    pid: Option<u32>,
    signals: mpsc::UnboundedSender<Signal>,
    exit: watch::Receiver<Option<ExitInfo>>,
}

impl Owner {
    fn watch(mut child: Child) -> Self {
        let pid = child.id();
        let (signals, mut requests) = mpsc::unbounded_channel::<Signal>();
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    Some(signal) = requests.recv() => {
                        // `id()` is `None` once the child is reaped: then there is no one to signal.
                        if let Some(pid) = child.id() {
                            tracing::debug!(pid, ?signal, "signalling an owned child");
                            let pid = nix::unistd::Pid::from_raw(pid as i32);
                            let _ = nix::sys::signal::kill(pid, signal);
                        }
                    }
                }
            };
            let info = match status {
                Ok(status) => ExitInfo {
                    code: status.code(),
                    signal: status.signal(),
                },
                Err(e) => {
                    tracing::warn!("cannot wait for an owned child: {e}");
                    ExitInfo::default()
                }
            };
            let _ = exit_tx.send(Some(info));
        });
        Self { pid, signals, exit }
    }

    /// The child's pid as it was started (for logs; signals go through [`Owner::signal`]).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Sends `signal` to the process if it has not been reaped.
    pub fn signal(&self, signal: Signal) {
        let _ = self.signals.send(signal);
    }

    /// Waits for the process to be reaped.
    pub async fn exited(&self) -> ExitInfo {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(info) => info.unwrap_or_default(),
            // The owner task is gone only with the runtime; report an unknown end.
            Err(_) => ExitInfo::default(),
        }
    }

    /// Waits up to `limit` for the process to be reaped.
    pub async fn exited_within(&self, limit: Duration) -> Option<ExitInfo> {
        tokio::time::timeout(limit, self.exited()).await.ok()
    }

    /// SIGTERM, `grace`, SIGKILL; returns once the process is reaped.
    pub async fn terminate(&self, grace: Duration) -> ExitInfo {
        self.signal(Signal::SIGTERM);
        if let Some(exit) = self.exited_within(grace).await {
            return exit;
        }
        self.signal(Signal::SIGKILL);
        self.exited().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_parent_is_signalled_and_its_end_is_reported() {
        let args = [
            "-c".to_owned(),
            "trap 'exit 7' TERM; sleep 5 & wait".to_owned(),
        ];
        let child = spawn(OwnedCommand {
            program: Path::new("sh"),
            args: &args,
            env: &[],
            cwd: None,
        })
        .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let exit = child.owner.terminate(Duration::from_secs(10)).await;
        assert_eq!(exit.code, Some(7), "the parent ended by its own TERM trap");
        assert!(!exit.success());
    }
}
