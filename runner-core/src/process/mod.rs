//! Process supervision, once for every agent: spawn with an environment built
//! from scratch and no shell, in its own process group; frame its stdout into
//! lines; keep the end of its stderr; end its whole tree.

pub mod detached;
pub mod env;
pub mod lines;
pub mod probe;
pub mod tree;

/// JSON-lines framing lives in the contract, for parsers; re-exported under its old path.
pub use runner_contract::framing;

use std::path::Path;
use std::process::{ExitStatus, Stdio};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdout};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{Error, ErrorKind, Result};
use crate::traits::agent::{Invocation, StdinClose};
use lines::LineDecoder;
use tree::ProcessIdentity;

/// How much of stderr is kept for failure messages.
pub const STDERR_TAIL: usize = 16 * 1024;

/// A running agent program.
pub struct AgentProcess {
    child: Child,
    identity: ProcessIdentity,
    /// The agent's stdout, framed.
    pub stdout: LineDecoder<ChildStdout>,
    stderr: Option<JoinHandle<String>>,
    close_stdin: Option<oneshot::Sender<()>>,
    exited: bool,
}

impl AgentProcess {
    /// Starts `invocation` in `cwd` with exactly `env`: no shell, its own process group,
    /// stdin messages written in the background (a big prompt cannot block stdout).
    pub fn spawn(invocation: &Invocation, cwd: &Path, env: &[(String, String)]) -> Result<Self> {
        let mut command = tokio::process::Command::new(&invocation.program);
        command
            .args(&invocation.args)
            .current_dir(cwd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        inherit_only_stdio(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| spawn_error(&invocation.program, &e))?;
        let pid = child
            .id()
            .ok_or_else(|| Error::internal("the agent exited before it could be watched"))?;
        // Read from /proc right away; the process may exit quickly, so fall back to 0.
        let identity = ProcessIdentity::of(pid).unwrap_or(ProcessIdentity { pid, start_time: 0 });
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::internal("no stdout pipe"))?;
        let stderr = child.stderr.take().map(|mut pipe| {
            tokio::spawn(async move {
                let mut tail = Vec::new();
                let mut chunk = vec![0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    tail.extend_from_slice(&chunk[..n]);
                    if tail.len() > 2 * STDERR_TAIL {
                        tail.drain(..tail.len() - STDERR_TAIL);
                    }
                }
                let start = tail.len().saturating_sub(STDERR_TAIL);
                String::from_utf8_lossy(&tail[start..]).into_owned()
            })
        });
        let (close_tx, close_rx) = oneshot::channel::<()>();
        if let Some(mut stdin) = child.stdin.take() {
            let messages = invocation.stdin.clone();
            let policy = invocation.close_stdin;
            tokio::spawn(async move {
                for message in messages {
                    let mut line = message.into_bytes();
                    line.push(b'\n');
                    if stdin.write_all(&line).await.is_err() {
                        return;
                    }
                }
                let _ = stdin.flush().await;
                if policy != StdinClose::AfterWrite {
                    // Keep stdin open until the runner says the result has arrived (or it is dropped).
                    let _ = close_rx.await;
                }
                drop(stdin);
            });
        }
        Ok(Self {
            child,
            identity,
            stdout: LineDecoder::new(stdout),
            stderr,
            close_stdin: Some(close_tx),
            exited: false,
        })
    }

    /// The agent's pid and start time (it leads its process group).
    pub fn identity(&self) -> ProcessIdentity {
        self.identity
    }

    /// Closes stdin (for agents that wait for more input after their result).
    pub fn close_stdin(&mut self) {
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
    }

    /// Waits for the agent to exit.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        self.exited = true;
        status
    }

    /// Ends the whole process tree: SIGTERM to the group, SIGKILL after `grace`.
    pub async fn end_tree(&mut self, grace: std::time::Duration) {
        // Reap the leader while waiting, so it does not linger as a zombie.
        let leader = self.identity;
        let ending = tree::end_group(&leader, grace);
        tokio::pin!(ending);
        tokio::select! {
            _ = &mut ending => {}
            _ = self.child.wait() => { self.exited = true; ending.await; }
        }
        if !self.exited {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
            self.exited = true;
        }
    }

    /// The end of what the agent wrote to stderr (waits for the pipe to close, briefly).
    pub async fn stderr_tail(&mut self) -> String {
        let Some(task) = self.stderr.take() else {
            return String::new();
        };
        match tokio::time::timeout(std::time::Duration::from_secs(2), task).await {
            Ok(Ok(text)) => text,
            _ => String::new(),
        }
    }
}

impl Drop for AgentProcess {
    /// A dropped process (the runner went away mid-run) must not leave its children behind.
    fn drop(&mut self) {
        if tree::group_alive(self.identity.pid) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.identity.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The agent gets stdin, stdout and stderr and no other descriptor of ours: whatever the
/// caller holds open without close-on-exec (a daemon's socket, a file a C library opened, a
/// pipe the terminal passed down) is closed at the agent's exec. Rust opens its own files
/// close-on-exec, but a host process that links the runner may not.
fn inherit_only_stdio(command: &mut tokio::process::Command) {
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes one raw system call and allocates
    // nothing. It marks descriptors close-on-exec rather than closing them, so the pipe
    // std uses to report a failed exec (already close-on-exec) keeps working.
    unsafe {
        command.pre_exec(|| {
            // Linux 5.11 and later. An older kernel answers ENOSYS; the spawn goes on, as
            // it did before this existed, rather than failing every run.
            libc::syscall(
                libc::SYS_close_range,
                3_u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
}

/// Like [`inherit_only_stdio`], and the agent leads a session of its own (`setsid`, which
/// also makes it the leader of its own process group): no signal aimed at the caller's
/// terminal or process group (Ctrl-C, a closed terminal's SIGHUP) reaches it.
fn own_session_with_only_stdio(command: &mut tokio::process::Command) {
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes two raw system calls and allocates
    // nothing. setsid cannot fail here: a freshly forked child is never a group leader.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            libc::syscall(
                libc::SYS_close_range,
                3_u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
}

fn spawn_error(program: &Path, e: &std::io::Error) -> Error {
    let what = program.display();
    match e.kind() {
        std::io::ErrorKind::NotFound => Error::new(
            ErrorKind::AgentUnavailable,
            format!(
                "the agent program {what} was not found: install it or put it on PATH (`codehands agents` shows where each agent's program is looked for)"
            ),
        ),
        std::io::ErrorKind::PermissionDenied => Error::new(
            ErrorKind::AgentUnavailable,
            format!("the agent program {what} is not executable: check its permissions"),
        ),
        _ => Error::new(
            ErrorKind::AgentUnavailable,
            format!("cannot start the agent program {what}: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use super::*;
    use crate::process::lines::Line;

    /// `cat` echoes its stdin and exits once stdin closes: it shows when the runner closes it.
    fn cat(close_stdin: StdinClose) -> AgentProcess {
        let invocation = Invocation {
            program: "cat".into(),
            args: Vec::new(),
            env: Vec::new(),
            stdin: vec!["first".into(), "second".into()],
            close_stdin,
        };
        let path = [("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        AgentProcess::spawn(&invocation, Path::new("/"), &path).unwrap()
    }

    async fn lines(process: &mut AgentProcess, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        while out.len() < n {
            match process.stdout.next_line().await.unwrap() {
                Some(Line::Text(text)) => out.push(text),
                other => panic!("unexpected {other:?}"),
            }
        }
        out
    }

    #[tokio::test]
    async fn the_agent_inherits_no_descriptor_beyond_stdio() {
        // A descriptor without close-on-exec, as a host process or a C library may hold:
        // a copy of an open file at 100 or above, so it cannot be mistaken for one `ls` opens.
        let file = std::fs::File::open("/proc/self/status").unwrap();
        #[allow(unsafe_code)]
        // SAFETY: F_DUPFD on a descriptor this test owns; the copy is closed below.
        let leaked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 100) };
        assert!(leaked >= 100, "fcntl(F_DUPFD) failed");
        let invocation = Invocation {
            program: "ls".into(),
            args: vec!["-1".into(), "/proc/self/fd".into()],
            env: Vec::new(),
            stdin: Vec::new(),
            close_stdin: StdinClose::AfterWrite,
        };
        let path = [("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        let mut process = AgentProcess::spawn(&invocation, Path::new("/"), &path).unwrap();
        let mut open = Vec::new();
        while let Some(Line::Text(fd)) = process.stdout.next_line().await.unwrap() {
            open.push(fd.parse::<i32>().unwrap());
        }
        process.wait().await.unwrap();
        #[allow(unsafe_code)]
        // SAFETY: `leaked` is the copy made above and nothing else owns it.
        unsafe {
            libc::close(leaked);
        }
        assert!(
            !open.contains(&leaked),
            "descriptor {leaked} reached the agent: {open:?}"
        );
        assert!(
            open.iter().all(|&fd| fd <= 3),
            "only stdio and the folder ls reads: {open:?}"
        );
    }

    #[tokio::test]
    async fn after_write_closes_stdin_once_every_line_is_written() {
        let mut process = cat(StdinClose::AfterWrite);
        assert_eq!(lines(&mut process, 2).await, ["first", "second"]);
        let status = tokio::time::timeout(Duration::from_secs(10), process.wait())
            .await
            .expect("cat exits once its stdin is closed");
        assert!(status.unwrap().success());
    }

    #[tokio::test]
    async fn after_result_keeps_stdin_open_until_the_runner_closes_it() {
        let mut process = cat(StdinClose::AfterResult);
        assert_eq!(lines(&mut process, 2).await, ["first", "second"]);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), process.wait())
                .await
                .is_err(),
            "stdin is still open, so cat is still running"
        );
        process.close_stdin();
        let status = tokio::time::timeout(Duration::from_secs(10), process.wait())
            .await
            .expect("cat exits once its stdin is closed");
        assert!(status.unwrap().success());
    }
}
