//! An agent that outlives the process that started it: it runs in a session of its own (so no
//! signal aimed at the caller's terminal or process group reaches it), its stderr goes straight
//! to a file of the run and its stdout through a pipe to `cat`, detached as well, appending to
//! a file of the run (so no pipe ties it to a reader that may die), and its stdin is a private
//! file that was unlinked once opened (or, for an agent in a conversation, a pipe fed by a
//! detached `tail -f` of the run's input file, so any process can give it input by appending
//! a line, and its stdin closes only when the relay is ended).
//!
//! Why `cat` and not the file itself as stdout: an agent may open `/dev/stdout` again and
//! rewrite it (an agent told `--output=/dev/stdout` may write its whole log there again after
//! each step); on a file that truncates what was written, on a pipe it appends. `cat` is the smallest
//! program that keeps a pipe's read end open whoever else goes away (the part conmon plays for
//! a container), and it exits once every writer has closed the pipe.

use std::io::Write;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use tokio::io::AsyncWriteExt;
use tokio::process::Child;
use tokio::sync::oneshot;

use super::tree::{self, ProcessIdentity};
use runner_contract::error::{Error, Result};
use runner_contract::private::PrivateRoot;
use runner_contract::traits::agent::{Invocation, StdinClose};

/// Where a detached agent's output goes.
#[derive(Debug, Clone)]
pub struct AgentOutput<'a> {
    /// The private root the files are under.
    pub root: &'a PrivateRoot,
    /// Its stdout (created, or truncated when it is there).
    pub stdout: &'a Path,
    /// Its stderr.
    pub stderr: &'a Path,
    /// Where its stdin messages are written before it starts (the file is unlinked once
    /// the agent has it open, so the prompt stays on disk only as long as it is read; in a
    /// conversation it is kept: it is the input file every later line is appended to).
    pub stdin: &'a Path,
}

/// An agent this process started; it keeps running when this value (or this process) goes.
#[derive(Debug)]
pub struct DetachedAgent {
    child: Child,
    identity: ProcessIdentity,
    relay: Child,
    relay_identity: Option<ProcessIdentity>,
    close_stdin: Option<oneshot::Sender<()>>,
    /// The `tail -f` feeding a conversation's stdin from its input file.
    input_relay: Option<ProcessIdentity>,
}

impl DetachedAgent {
    /// Starts `invocation` in `cwd` with exactly `env`: no shell, a session of its own, its
    /// output into `output`'s files, and no descriptor of ours beyond those three.
    pub fn spawn(
        invocation: &Invocation,
        cwd: &Path,
        env: &[(String, String)],
        output: &AgentOutput<'_>,
    ) -> Result<Self> {
        let truncate = |path: &Path| {
            output.root.open(
                path,
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true),
            )
        };
        let stdout = truncate(output.stdout)?;
        let stderr = truncate(output.stderr)?;
        let (relay_in, agent_out) = std::io::pipe()
            .map_err(|e| Error::io("cannot make the pipe for the agent's output", &e))?;
        let relay = spawn_relay(relay_in, stdout, env)?;
        let relay_identity = relay.id().and_then(ProcessIdentity::of);
        let mut command = tokio::process::Command::new(&invocation.program);
        command
            .args(&invocation.args)
            .current_dir(cwd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::from(agent_out))
            .stderr(Stdio::from(stderr));
        let from_file = invocation.close_stdin == StdinClose::AfterWrite;
        let conversation = invocation.close_stdin == StdinClose::Conversation;
        let mut input_relay = None;
        if from_file || conversation {
            let mut file = truncate(output.stdin)?;
            for message in &invocation.stdin {
                file.write_all(message.as_bytes())
                    .and_then(|()| file.write_all(b"\n"))
                    .map_err(|e| {
                        Error::io(format!("cannot write {}", output.stdin.display()), &e)
                    })?;
            }
            drop(file);
        }
        if from_file {
            let reader = runner_contract::private::open_no_follow(
                output.stdin,
                std::fs::OpenOptions::new().read(true),
            )?;
            command.stdin(Stdio::from(reader));
        } else if conversation {
            let (agent_in, relay_out) = std::io::pipe()
                .map_err(|e| Error::io("cannot make the pipe for the agent's input", &e))?;
            let tail = spawn_input_relay(output.stdin, relay_out, env)?;
            input_relay = tail.id().and_then(ProcessIdentity::of);
            command.stdin(Stdio::from(agent_in));
        } else {
            command.stdin(Stdio::piped());
        }
        super::own_session_with_only_stdio(&mut command);
        let spawned = command.spawn();
        if from_file {
            // The agent holds it open; nobody else needs the prompt on disk.
            let _ = std::fs::remove_file(output.stdin);
        }
        drop(command);
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                if let Some(relay) = &input_relay {
                    tree::kill_group(relay);
                }
                return Err(super::spawn_error(&invocation.program, &e));
            }
        };
        let pid = child
            .id()
            .ok_or_else(|| Error::internal("the agent exited before it could be watched"))?;
        let identity = ProcessIdentity::of(pid).unwrap_or(ProcessIdentity { pid, start_time: 0 });
        let (close_tx, close_rx) = oneshot::channel::<()>();
        if let Some(mut stdin) = child.stdin.take() {
            let messages = invocation.stdin.clone();
            tokio::spawn(async move {
                for message in messages {
                    let mut line = message.into_bytes();
                    line.push(b'\n');
                    if stdin.write_all(&line).await.is_err() {
                        return;
                    }
                }
                let _ = stdin.flush().await;
                // Open until the runner says the result has arrived (or goes away).
                let _ = close_rx.await;
            });
        }
        Ok(Self {
            child,
            identity,
            relay,
            relay_identity,
            close_stdin: Some(close_tx),
            input_relay,
        })
    }

    /// The agent's pid and start time (it leads its session and its process group).
    pub fn identity(&self) -> ProcessIdentity {
        self.identity
    }

    /// Closes a piped stdin (for agents that wait for more input after their result), or
    /// ends the relay that feeds a conversation's.
    pub fn close_stdin(&mut self) {
        if let Some(close) = self.close_stdin.take() {
            let _ = close.send(());
        }
        if let Some(relay) = self.input_relay.take() {
            tree::kill_group(&relay);
        }
    }

    /// The `tail -f` that feeds a conversation's stdin (`None` for other agents).
    pub fn input_relay_identity(&self) -> Option<ProcessIdentity> {
        self.input_relay
    }

    /// The `cat` that carries its stdout to the file (`None` if it ended at once).
    pub fn relay_identity(&self) -> Option<ProcessIdentity> {
        self.relay_identity
    }

    /// The exit status once the agent has exited (reaping it), `None` while it runs.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Whether everything the agent (and whatever shares its stdout) wrote is in the file:
    /// the relay has seen the pipe close and exited.
    pub fn output_complete(&mut self) -> bool {
        !matches!(self.relay.try_wait(), Ok(None))
    }

    /// Whether the relay ended with an error: it could not write the output to its file (a
    /// full disk), so the file holds only part of what the agent printed.
    pub fn relay_failed(&mut self) -> bool {
        matches!(self.relay.try_wait(), Ok(Some(status)) if !status.success())
    }

    /// Waits for the agent to exit.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Ends the whole process tree: SIGTERM to the group, SIGKILL after `grace`, reaping
    /// the leader meanwhile.
    pub async fn end_tree(&mut self, grace: std::time::Duration) {
        let leader = self.identity;
        let ending = tree::end_group(&leader, grace);
        tokio::pin!(ending);
        tokio::select! {
            _ = &mut ending => {}
            _ = self.child.wait() => { ending.await; }
        }
        if self.try_exit().is_none() {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

/// Starts `cat` in a session of its own, copying the pipe `from` into `to` until every writer
/// of the pipe has closed it: it ends with the agent (and whatever shares its stdout).
fn spawn_relay(
    from: std::io::PipeReader,
    to: std::fs::File,
    env: &[(String, String)],
) -> Result<Child> {
    let mut command = relay_command("cat", env);
    command.stdin(Stdio::from(from)).stdout(Stdio::from(to));
    spawn_relay_command(
        command,
        "`cat`, which carries the agent's output to its file",
    )
}

/// Starts `tail -f` in a session of its own, copying the input file `from` (from its first
/// byte, then every line appended) into the pipe `to`, the agent's stdin. Ending it closes
/// the agent's stdin: nobody else holds the pipe's write end.
fn spawn_input_relay(
    from: &Path,
    to: std::io::PipeWriter,
    env: &[(String, String)],
) -> Result<Child> {
    let mut command = relay_command("tail", env);
    command
        .args(["-c", "+1", "-f"])
        .arg(from)
        .stdin(Stdio::null())
        .stdout(Stdio::from(to));
    spawn_relay_command(command, "`tail`, which carries input to the agent")
}

/// A relay program with nothing of the agent's environment but PATH, and no stderr.
fn relay_command(program: &str, env: &[(String, String)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .env_clear()
        .envs(env.iter().filter(|(k, _)| k == "PATH").map(|(k, v)| (k, v)))
        .stderr(Stdio::null());
    super::own_session_with_only_stdio(&mut command);
    command
}

/// Spawns a relay; `what` says which, for the error.
fn spawn_relay_command(mut command: tokio::process::Command, what: &str) -> Result<Child> {
    command
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {what}: put it on PATH"), &e))
}

/// Starts a supervisor program for a run (`program args…`), detached like an agent: a session
/// of its own, no stdin, its output appended to `log` (0600). It is not waited for: it goes
/// on when this process ends.
pub fn spawn_supervisor(
    program: &Path,
    args: &[std::ffi::OsString],
    root: &PrivateRoot,
    log: &Path,
) -> Result<()> {
    let out = root.append(log)?;
    let err = out
        .try_clone()
        .map_err(|e| Error::io(format!("cannot open {}", log.display()), &e))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    super::own_session_with_only_stdio(&mut command);
    command.spawn().map(drop).map_err(|e| {
        Error::io(
            format!("cannot start the supervisor {}", program.display()),
            &e,
        )
    })
}
