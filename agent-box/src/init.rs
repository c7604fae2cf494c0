//! The box's init (`codehands __box-init`), pid 1 inside the box.
//!
//! It listens on each allowed endpoint inside the box's network namespace (which has only
//! `lo`) and carries every connection to the unix socket of that endpoint, whose outer end
//! decides where it may go. It starts the agent, reaps every orphan (it is pid 1), passes a
//! stop (SIGTERM, SIGINT, SIGHUP) on to every process in the box, and exits with the agent's
//! exit code once the agent has exited; the kernel then ends whatever is left in the box.
//!
//! It also watches a pipe whose other end only the outer process holds: when the outer
//! process is gone (killed before a parent-death signal could be set up, say), the pipe
//! ends and the init ends the box.
//!
//! It is out of the agent's reach: it makes itself non-dumpable before it starts the agent,
//! so the agent (same uid, no capability) can neither ptrace it nor open its
//! `/proc/1/mem` or `/proc/1/environ`, even where the system call filter would not stop
//! it; its relays are threads of it. (The agent, started by `exec`, is dumpable again.)
//!
//! Its arguments: `--outer-fd N`, `--listen ADDR SOCKET` for each endpoint, then `--`, the
//! agent's program, its `argv[0]` and its arguments.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::plan::{BoxPlan, SOCKETS_INSIDE};

/// The exit code of a box that could not start its agent (as `env` and `timeout` use).
pub const CANNOT_START: i32 = 125;

/// The signals a stop may send; the init and the outer process pass them on.
pub const STOP_SIGNALS: &[Signal] = &[Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// The init's arguments for `plan`, watching descriptor `outer_fd`.
pub fn init_args(plan: &BoxPlan, outer_fd: i32) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--outer-fd".into(), outer_fd.to_string().into()];
    for endpoint in &plan.network.endpoints {
        args.push("--listen".into());
        args.push(endpoint.listen.to_string().into());
        args.push(Path::new(SOCKETS_INSIDE).join(&endpoint.socket).into());
    }
    args.push("--".into());
    args.push(plan.command.program.clone().into());
    args.push(plan.command.argv0.clone().into());
    args.extend(plan.command.args.iter().map(OsString::from));
    args
}

/// The init's arguments, read back.
#[derive(Debug, PartialEq, Eq)]
pub struct InitArgs {
    /// The descriptor of the outer process's pipe.
    pub outer_fd: Option<i32>,
    /// Each address to listen on, and the socket it leads to.
    pub listen: Vec<(SocketAddr, PathBuf)>,
    /// The agent's program.
    pub program: PathBuf,
    /// Its `argv[0]`.
    pub argv0: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl InitArgs {
    /// Reads what [`init_args`] wrote.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, String> {
        let mut args = args.into_iter();
        let mut listen = Vec::new();
        let mut outer_fd = None;
        loop {
            let arg = args.next().ok_or("no `--` before the agent's program")?;
            if arg == "--" {
                break;
            }
            if arg == "--outer-fd" {
                let fd = args
                    .next()
                    .and_then(|a| a.into_string().ok())
                    .and_then(|a| a.parse::<i32>().ok())
                    .filter(|fd| *fd > 2)
                    .ok_or("--outer-fd wants a descriptor number")?;
                outer_fd = Some(fd);
                continue;
            }
            if arg != "--listen" {
                return Err(format!("unknown argument {arg:?}"));
            }
            let addr = args
                .next()
                .and_then(|a| a.into_string().ok())
                .and_then(|a| a.parse::<SocketAddr>().ok())
                .ok_or("--listen wants an address and a socket")?;
            let socket = args
                .next()
                .ok_or("--listen wants an address and a socket")?;
            listen.push((addr, PathBuf::from(socket)));
        }
        let program = PathBuf::from(args.next().ok_or("no agent program")?);
        let argv0 = args.next().ok_or("no argv[0] for the agent")?;
        Ok(Self {
            outer_fd,
            listen,
            program,
            argv0,
            args: args.collect(),
        })
    }
}

/// The init's whole life; returns the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = match InitArgs::parse(args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("codehands box init: {e}");
            return CANNOT_START;
        }
    };
    // Blocked before any thread starts, so every thread inherits the mask and the signals
    // wait for `watch_signals` (pid 1 drops a signal it neither handles nor blocks). A child
    // gets the default mask back: std resets it before exec.
    let signals = stop_set();
    if let Err(e) = signals.thread_block() {
        eprintln!("codehands box init: cannot block signals: {e}");
        return CANNOT_START;
    }
    for (addr, socket) in &args.listen {
        let listener = match TcpListener::bind(addr) {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("codehands box init: cannot listen on {addr}: {e}");
                return CANNOT_START;
            }
        };
        let socket = socket.clone();
        std::thread::spawn(move || forward(listener, &socket));
    }
    if let Some(fd) = args.outer_fd {
        watch_outer(fd);
    }
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("codehands box init: cannot keep the agent from tracing the init: {e}");
        return CANNOT_START;
    }
    // The agent gets the default signal mask (std does not reset it): unblocked just for
    // the spawn. Nothing can kill the init meanwhile: pid 1 ignores a signal it has no
    // handler for, SIGKILL from outside aside.
    let _ = signals.thread_unblock();
    let agent = runner_process::foreground::Foreground::new(&args.program)
        .arg0(&args.argv0)
        .args(&args.args)
        .spawn();
    let _ = signals.thread_block();
    let agent = match agent {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(e) => {
            eprintln!("codehands box: the agent: {e}");
            return CANNOT_START;
        }
    };
    // The init leaves the worktree: the outer process is the one session leader working
    // there, which is how a supervisor finds a run it had not recorded yet.
    let _ = std::env::set_current_dir("/");
    std::thread::spawn(move || watch_signals(signals));
    reap_until(agent)
}

/// The signals a stop sends.
pub fn stop_set() -> SigSet {
    let mut set = SigSet::empty();
    for signal in STOP_SIGNALS {
        set.add(*signal);
    }
    set
}

/// Ends the box when the outer process is gone: its pipe (inherited as `fd`, whose write
/// end only the outer process holds) reads end of file.
fn watch_outer(fd: i32) {
    // Reopened through /proc (a file of our own, closed on exec), then the inherited
    // descriptor closed, so the agent does not get it.
    let pipe = std::fs::File::open(format!("/proc/self/fd/{fd}"));
    let _ = nix::unistd::close(fd);
    let Ok(mut pipe) = pipe else {
        return;
    };
    std::thread::spawn(move || {
        use std::io::Read;
        let mut byte = [0u8; 1];
        while matches!(pipe.read(&mut byte), Ok(n) if n > 0) {}
        let _ = nix::sys::signal::kill(Pid::from_raw(-1), Signal::SIGKILL);
        std::process::exit(128 + Signal::SIGKILL as i32);
    });
}

/// Accepts connections on `listener` and carries each to `socket`.
fn forward(listener: TcpListener, socket: &Path) {
    for conn in listener.incoming().flatten() {
        let socket = socket.to_owned();
        std::thread::spawn(move || {
            if let Ok(outer) = UnixStream::connect(&socket) {
                crate::relay::pump(conn, outer);
            }
        });
    }
}

/// Passes each stop signal on to every process in the box (`kill(-1)` from pid 1 reaches
/// all of them but the init itself).
fn watch_signals(signals: SigSet) {
    while let Ok(signal) = signals.wait() {
        let _ = nix::sys::signal::kill(Pid::from_raw(-1), signal);
    }
}

/// Reaps every child until `agent` has exited; its exit code (128 + the signal for a
/// signal, as a shell says).
fn reap_until(agent: Pid) -> i32 {
    loop {
        match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == agent => return code,
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == agent => {
                return 128 + signal as i32;
            }
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return CANNOT_START,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::sample;

    #[test]
    fn the_arguments_read_back() {
        let plan = sample();
        let parsed = InitArgs::parse(init_args(&plan, 7)).unwrap();
        assert_eq!(
            parsed,
            InitArgs {
                outer_fd: Some(7),
                listen: vec![(
                    "127.0.0.1:8080".parse().unwrap(),
                    "/run/codehands/0.sock".into()
                )],
                program: "/opt/agent/bin/agent".into(),
                argv0: "agent".into(),
                args: vec!["-p".into(), "--json".into()],
            }
        );
    }

    #[test]
    fn an_agent_argument_that_looks_like_ours_stays_the_agents() {
        let mut plan = sample();
        plan.command.args = vec!["--listen".into(), "--".into()];
        let parsed = InitArgs::parse(init_args(&plan, 7)).unwrap();
        assert_eq!(parsed.args, ["--listen", "--"]);
        assert_eq!(parsed.listen.len(), 1);
    }

    #[test]
    fn bad_arguments_are_refused() {
        let parse = |a: &[&str]| InitArgs::parse(a.iter().map(OsString::from));
        assert!(parse(&["--listen", "nope", "/s", "--", "p", "p"]).is_err());
        assert!(parse(&["--what"]).is_err());
        assert!(parse(&["--"]).is_err());
        assert!(
            parse(&["--outer-fd", "1", "--", "p", "p"]).is_err(),
            "not stdio"
        );
    }
}
