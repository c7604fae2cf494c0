//! Starting and ending processes, once for the workspace: every product spawn goes through
//! this crate (`xtask/tests/tidy.rs`, `spawning_happens_only_in_the_process_layer`). One
//! way per job:
//! - [`detached`]: an agent or a supervisor that outlives its starter: a session of its own,
//!   an environment built from scratch ([`env`]), no descriptor past stdio, output to files.
//! - [`tree`]: ending a detached agent's whole process tree, by pid and start time.
//! - [`owned`]: a child owned until it is reaped, in the caller's process group, its pipes
//!   handed over, only the parent signalled (Claude Code under `claude-lifecycle`).
//! - [`foreground`]: a program a program of ours runs in its foreground and waits for (the
//!   box's bubblewrap, the agent under a box's init, `ssh` carrying a Docker connection).
//! - [`tool`]: a short call for an answer (`git`, `ldd`, `docker build -`, `bwrap --version`),
//!   its output bounded; [`probe`]: the same for an agent's version and `doctor`'s checks, with
//!   only the agent's allowlist, in an empty folder.

#[macro_use]
mod builder;
pub mod detached;
pub mod env;
pub mod foreground;
pub mod owned;
pub mod probe;
pub mod tool;
pub mod tree;

use std::path::Path;

use runner_contract::error::{Error, ErrorKind};

/// How much of stderr is kept for failure messages.
pub const STDERR_TAIL: usize = 16 * 1024;

/// The agent leads a session of its own (`setsid`, which also makes it the leader of its own
/// process group): no signal aimed at the caller's terminal or process group (Ctrl-C, a
/// closed terminal's SIGHUP) reaches it. It gets stdin, stdout and stderr and no other
/// descriptor of ours: whatever the caller holds open without close-on-exec (a daemon's
/// socket, a file a C library opened, a pipe the terminal passed down) is closed at the
/// agent's exec. Rust opens its own files close-on-exec, but a host process that links the
/// runner may not.
fn own_session_with_only_stdio(command: &mut tokio::process::Command) {
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes two raw system calls and allocates
    // nothing. setsid cannot fail here: a freshly forked child is never a group leader.
    // It marks descriptors close-on-exec rather than closing them, so the pipe std uses to
    // report a failed exec (already close-on-exec) keeps working; an older kernel than
    // Linux 5.11 answers ENOSYS and the spawn goes on.
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

/// A program that could not be started (or waited for), with its name.
#[derive(Debug)]
pub struct CannotStart {
    program: String,
    source: std::io::Error,
}

impl CannotStart {
    fn new(program: impl AsRef<std::ffi::OsStr>, source: std::io::Error) -> Self {
        Self {
            program: Path::new(program.as_ref()).display().to_string(),
            source,
        }
    }

    /// The program, as it was given.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// What the system said.
    pub fn io(&self) -> &std::io::Error {
        &self.source
    }
}

impl std::fmt::Display for CannotStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let program = &self.program;
        match self.source.kind() {
            std::io::ErrorKind::NotFound => write!(
                f,
                "cannot run {program}: it was not found (install it, or put it on PATH)"
            ),
            std::io::ErrorKind::PermissionDenied => write!(
                f,
                "cannot run {program}: it is not executable (check its permissions)"
            ),
            _ => write!(f, "cannot run {program}: {}", self.source),
        }
    }
}

impl std::error::Error for CannotStart {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<CannotStart> for std::io::Error {
    fn from(e: CannotStart) -> Self {
        std::io::Error::new(e.source.kind(), e.to_string())
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

    use super::detached::{AgentOutput, DetachedAgent};
    use runner_contract::private::PrivateRoot;
    use runner_contract::traits::agent::{Invocation, StdinClose};

    #[tokio::test]
    async fn the_agent_inherits_no_descriptor_beyond_stdio() {
        // A descriptor without close-on-exec, as a host process or a C library may hold:
        // a copy of an open file at 100 or above, so it cannot be mistaken for one `ls` opens.
        let file = std::fs::File::open("/proc/self/status").unwrap();
        #[allow(unsafe_code)]
        // SAFETY: F_DUPFD on a descriptor this test owns; the copy is closed below.
        let leaked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 100) };
        assert!(leaked >= 100, "fcntl(F_DUPFD) failed");
        let dir = tempfile::tempdir().unwrap();
        let root = PrivateRoot::new(dir.path());
        let (stdout, stderr, stdin) = (
            dir.path().join("out"),
            dir.path().join("err"),
            dir.path().join("in"),
        );
        let output = AgentOutput {
            root: &root,
            stdout: &stdout,
            stderr: &stderr,
            stdin: &stdin,
        };
        let invocation = Invocation {
            program: "ls".into(),
            args: vec!["-1".into(), "/proc/self/fd".into()],
            env: Vec::new(),
            stdin: Vec::new(),
            close_stdin: StdinClose::AfterWrite,
        };
        let path = [("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
        let mut agent =
            DetachedAgent::spawn(&invocation, std::path::Path::new("/"), &path, &output).unwrap();
        agent.wait().await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !agent.output_complete() {
            assert!(
                std::time::Instant::now() < deadline,
                "the relay never ended"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        #[allow(unsafe_code)]
        // SAFETY: `leaked` is the copy made above and nothing else owns it.
        unsafe {
            libc::close(leaked);
        }
        let open: Vec<i32> = std::fs::read_to_string(&stdout)
            .unwrap()
            .lines()
            .map(|fd| fd.parse().unwrap())
            .collect();
        assert!(
            !open.contains(&leaked),
            "descriptor {leaked} reached the agent: {open:?}"
        );
        assert!(
            open.iter().all(|&fd| fd <= 3),
            "only stdio and the folder ls reads: {open:?}"
        );
    }
}
