//! A `codehands` run on a pseudo-terminal, as a person at a terminal sees it.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A child on a pseudo-terminal, with everything it printed.
pub struct OnTerminal {
    /// The command.
    pub child: std::process::Child,
    /// The terminal's other side: what is written here is typed.
    pub master: std::fs::File,
    seen: Arc<Mutex<String>>,
}

impl OnTerminal {
    /// Starts `cmd` with stdin and stderr on a new pseudo-terminal, and stdout too unless
    /// `stdout_piped`.
    pub fn start(cmd: &mut Command, stdout_piped: bool) -> Self {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave = std::fs::File::from(pty.slave);
        cmd.stdin(slave.try_clone().unwrap())
            .stderr(slave.try_clone().unwrap());
        if stdout_piped {
            cmd.stdout(Stdio::piped());
        } else {
            cmd.stdout(slave.try_clone().unwrap());
        }
        let child = cmd.spawn().unwrap();
        // Only the child holds the terminal now, so reading ends when it has gone.
        drop(slave);
        let master = std::fs::File::from(pty.master);
        let seen = Arc::new(Mutex::new(String::new()));
        let (mut reader, into) = (master.try_clone().unwrap(), seen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Reading ends with EIO once the child and every copy of the slave are gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Self {
            child,
            master,
            seen,
        }
    }

    /// Waits until `needle` has been printed.
    pub fn wait_for(&self, needle: &str) {
        self.wait_for_times(needle, 1);
    }

    /// Waits until `needle` has been printed `times` times.
    pub fn wait_for_times(&self, needle: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.seen.lock().unwrap().matches(needle).count() < times {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} ×{times} in {:?}",
                self.seen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `line` and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\n").unwrap();
    }

    /// Waits for the child's exit; its code and all it printed.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let seen = self.seen.lock().unwrap().clone();
        (status.code(), seen)
    }
}

impl Drop for OnTerminal {
    /// A test that fails while the command waits leaves no command behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
