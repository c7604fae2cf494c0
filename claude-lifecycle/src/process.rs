//! The Claude process: spawn it, own it until it is reaped, signal it, read its pipes.
//!
//! Only the parent process is ever signalled: its descendants are Claude's business (the
//! spec's rule; Claude ends its own tools). A signal is sent by the one task that owns the
//! `Child`, and only while the child is not yet reaped, so a pid the kernel has given to
//! another process is never signalled.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::Serialize;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, watch};

use crate::error::{Error, Result};
use crate::options::ResolvedConfig;

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

/// A spawned process with its pipes taken apart.
pub(crate) struct Spawned {
    pub owner: Owner,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// Starts `config` with the parent environment plus its overlay.
pub(crate) fn spawn(config: &ResolvedConfig) -> Result<Spawned> {
    let mut command = tokio::process::Command::new(&config.program);
    command
        .args(&config.argv)
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The last resort if everything else is dropped mid-run (a runtime shut down):
        // no Claude is left running without a reader.
        .kill_on_drop(true);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: config.program.clone(),
        source,
    })?;
    tracing::debug!(program = %config.program.display(), pid = child.id(), "spawned Claude");
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three pipes were asked for");
    };
    Ok(Spawned {
        owner: Owner::watch(child),
        stdin,
        stdout,
        stderr,
    })
}

/// The handle of the task that owns the child: signals go through it, the exit comes out.
#[derive(Clone)]
pub(crate) struct Owner {
    signals: mpsc::UnboundedSender<Signal>,
    exit: watch::Receiver<Option<ExitInfo>>,
}

impl Owner {
    fn watch(mut child: Child) -> Self {
        let (signals, mut requests) = mpsc::unbounded_channel::<Signal>();
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    Some(signal) = requests.recv() => {
                        // `id()` is `None` once the child is reaped: then there is no one to signal.
                        if let Some(pid) = child.id() {
                            tracing::debug!(pid, ?signal, "signalling Claude");
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
                    tracing::warn!("cannot wait for Claude: {e}");
                    ExitInfo::default()
                }
            };
            let _ = exit_tx.send(Some(info));
        });
        Self { signals, exit }
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

/// Reads a pipe to its end into a shared buffer, keeping its last `cap` bytes. The buffer
/// is shared so what was read survives an abort (a descendant of Claude may hold the pipe
/// open after Claude has exited, and draining is bounded).
pub(crate) fn collect<R>(
    mut pipe: R,
    cap: usize,
) -> (Arc<Mutex<Vec<u8>>>, tokio::task::JoinHandle<()>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let shared = buffer.clone();
    let task = tokio::spawn(async move {
        let mut chunk = vec![0u8; 64 << 10];
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            let mut buffer = shared.lock().unwrap_or_else(|p| p.into_inner());
            buffer.extend_from_slice(&chunk[..n]);
            // The end is what says why a run failed.
            if buffer.len() > cap {
                let cut = buffer.len() - cap;
                buffer.drain(..cut);
            }
        }
    });
    (buffer, task)
}

/// Waits up to `grace` for the reading tasks, then aborts those still reading.
pub(crate) async fn drain(tasks: Vec<tokio::task::JoinHandle<()>>, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    for mut task in tasks {
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            tracing::debug!("output still open {grace:?} after exit: no longer read");
            task.abort();
        }
    }
}
