//! A program that a program of ours runs in its foreground and then waits for, or hands to a
//! thread: the box's bubblewrap (agent-box's `__box`, in a process group of its own), the
//! agent under a box's init (`__box-init`, `__remote-init`, with the name it is shown by), the
//! remote shim's cleanup (not waited for), `ssh` carrying a Docker connection. Unlike
//! [`crate::detached`], it shares what the caller chose to hand down (its stdio, a descriptor
//! left open on purpose for bubblewrap); unlike [`crate::tool`], its output is not captured.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use crate::CannotStart;

/// A program to start; build it, then [`Foreground::spawn`] (or [`Foreground::spawn_async`]).
#[derive(Debug)]
pub struct Foreground {
    program: OsString,
    command: std::process::Command,
}

impl Foreground {
    /// `program` (a path, or a name looked up on PATH), with this process's environment,
    /// folder and stdio unless told otherwise.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let program = program.as_ref().to_owned();
        let command = std::process::Command::new(&program);
        Self { program, command }
    }

    /// The name it is shown by (its `argv[0]`), when not its path.
    pub fn arg0(&mut self, name: impl AsRef<OsStr>) -> &mut Self {
        self.command.arg0(name);
        self
    }

    command_builders!();

    /// Its stdin (this process's unless set).
    pub fn stdin(&mut self, stdin: Stdio) -> &mut Self {
        self.command.stdin(stdin);
        self
    }

    /// Its stdout (this process's unless set).
    pub fn stdout(&mut self, stdout: Stdio) -> &mut Self {
        self.command.stdout(stdout);
        self
    }

    /// Its stderr (this process's unless set).
    pub fn stderr(&mut self, stderr: Stdio) -> &mut Self {
        self.command.stderr(stderr);
        self
    }

    /// A process group of its own, which it leads: a signal for this process's group (a
    /// terminal's Ctrl-C) does not reach it, and one for its group reaches all it starts.
    pub fn own_group(&mut self) -> &mut Self {
        self.command.process_group(0);
        self
    }

    /// Starts it; the caller waits for it (or reaps it by pid).
    pub fn spawn(&mut self) -> Result<std::process::Child, CannotStart> {
        self.command
            .spawn()
            .map_err(|e| CannotStart::new(&self.program, e))
    }

    /// Starts it under the current tokio runtime, killed when the handle is dropped (a
    /// connection's carrier goes with its connection).
    pub fn spawn_async(&mut self) -> Result<tokio::process::Child, CannotStart> {
        let command = std::mem::replace(&mut self.command, std::process::Command::new(""));
        let mut command = tokio::process::Command::from(command);
        let spawned = command
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| CannotStart::new(&self.program, e));
        self.command = command.into_std();
        spawned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_it_is_shown_by_and_its_own_group() {
        let mut child = Foreground::new("sh")
            .arg0("shown-as")
            .args(["-c", "echo $0 $(cut -d' ' -f5 /proc/$$/stat)"])
            .stdout(Stdio::piped())
            .own_group()
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = std::io::read_to_string(child.stdout.take().unwrap()).unwrap();
        assert!(child.wait().unwrap().success());
        let words: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(words, ["shown-as", pid.to_string().as_str()]);
    }

    #[tokio::test]
    async fn a_missing_program_is_named() {
        let e = Foreground::new("codehands-no-such-program")
            .spawn_async()
            .unwrap_err();
        assert!(e.to_string().contains("codehands-no-such-program"), "{e}");
    }
}
