//! The outer box process (`codehands __box runs/<id>/box.json`): what the runner starts
//! instead of the agent, so `agent.json`, a stop, adoption, the exit code and the output
//! files work as for any agent.
//!
//! It makes the box's files (private home and temp folder, the generated `/etc` files, the
//! login), binds one unix socket per allowed endpoint and serves each with the only
//! destination it allows, joins the session's cgroup, starts bubblewrap, passes a stop on to
//! the box's init, waits, cleans up and exits with the agent's exit code. bubblewrap runs in
//! a process group of its own (a stop reaches the agent through the init, which lets it end
//! cleanly) and dies with this process (`--die-with-parent`), and the box with it.
//!
//! It hands bubblewrap the box's system call filter ([`crate::seccomp`]) in a memory file
//! that bubblewrap reads and closes before it starts the init (neither the init nor the
//! agent inherits it), and watches the init from outside ([`crate::watchdog`]).

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::{Component, Path};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use runner_contract::private::PrivateRoot;

use crate::init::{CANNOT_START, stop_set};
use crate::plan::{BoxPlan, Destination, LoginFile, LoginHow};

/// The outer's flag that says the runner removes the box's sockets and cgroup once the
/// outer has exited (its supervisor does at the turn's end, `recover` after a crash): the
/// outer then exits as soon as the box has, and the agent's end reaches the runner without
/// waiting for the cleanup (moving this process out of the cgroup cost up to 16 ms here).
pub const RUNNER_CLEANS: &str = "--runner-cleans";

/// The outer process's whole life; returns the exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let mut args = args.into_iter().peekable();
    let runner_cleans = args.next_if(|a| a == RUNNER_CLEANS).is_some();
    let (Some(plan_path), None) = (args.next(), args.next()) else {
        eprintln!("codehands box: usage: codehands __box [--runner-cleans] RUN_DIR/box.json");
        return CANNOT_START;
    };
    // Blocked before any thread starts, so the threads inherit the mask and a stop waits
    // for `pass_on_stops`; bubblewrap gets the default mask back (std resets it).
    let signals = stop_set();
    if let Err(e) = signals.thread_block() {
        eprintln!("codehands box: cannot block signals: {e}");
        return CANNOT_START;
    }
    let plan = match read_plan(Path::new(&plan_path)) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("codehands box: {e}");
            return CANNOT_START;
        }
    };
    // The cgroup is made and joined on a thread of its own while the box's files are made:
    // joining waits on the kernel (a move between cgroups waits for an RCU grace period, a
    // few ms per hierarchy), not on a CPU. Both are done before bubblewrap starts.
    let joining = plan.cgroup.clone().map(|cgroup| {
        let limits = plan.limits;
        std::thread::spawn(move || crate::cgroup::enter(&cgroup, &limits))
    });
    let prepared = prepare(&plan);
    let joined = joining.map(|thread| {
        thread
            .join()
            .unwrap_or_else(|_| Err("the thread that joins the cgroup panicked".into()))
    });
    if let (Some(cgroup), Some(Err(e))) = (&plan.cgroup, &joined) {
        eprintln!("codehands box: the limits cannot be applied: {e}");
        crate::cgroup::leave(cgroup);
        return CANNOT_START;
    }
    let listeners = match prepared {
        Ok(listeners) => listeners,
        Err(e) => {
            eprintln!("codehands box: {e}");
            if let Some(cgroup) = &plan.cgroup {
                crate::cgroup::leave(cgroup);
            }
            return CANNOT_START;
        }
    };
    for (listener, to) in listeners {
        std::thread::spawn(move || serve(listener, &to));
    }
    let code = run_bwrap(&plan, signals);
    if runner_cleans {
        return code;
    }
    let _ = remove_sockets(&plan);
    if let Some(cgroup) = &plan.cgroup {
        crate::cgroup::leave(cgroup);
    }
    code
}

/// Reads the plan strictly, never through a link.
fn read_plan(path: &Path) -> Result<BoxPlan, String> {
    let bytes = runner_contract::private::read_no_follow(path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} is gone: start the run again", path.display()))?;
    BoxPlan::from_json(&bytes).map_err(|e| e.to_string())
}

/// Starts bubblewrap (from this thread, which lives until the box ends: `--die-with-parent`
/// is tied to the thread that started it), passes stops on, and waits.
fn run_bwrap(plan: &BoxPlan, signals: nix::sys::signal::SigSet) -> i32 {
    // The pipe the box's init watches: its write end stays here (closed on exec), its read
    // end goes into the box; when this process is gone, the box ends.
    let (watched, _held) = match std::io::pipe() {
        Ok(pipe) => pipe,
        Err(e) => {
            eprintln!("codehands box: cannot make the box's pipe: {e}");
            return CANNOT_START;
        }
    };
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    if let Err(e) = fcntl(&watched, FcntlArg::F_SETFD(FdFlag::empty())) {
        eprintln!("codehands box: cannot hand the box its pipe: {e}");
        return CANNOT_START;
    }
    let filter = match seccomp_file(plan) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("codehands box: {e}");
            return CANNOT_START;
        }
    };
    let fds = crate::argv::Descriptors {
        outer: watched.as_raw_fd(),
        seccomp: filter.as_raw_fd(),
    };
    let host = crate::argv::Host {
        proc: crate::argv::HostProc::read(),
        etc_folders: crate::etc::host_folders(plan),
    };
    // bubblewrap gets the default signal mask (std does not reset it): unblocked just for
    // the spawn.
    let _ = signals.thread_unblock();
    let spawned = runner_process::foreground::Foreground::new(&plan.bwrap)
        .args(crate::argv::bwrap_args(plan, fds, &host))
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .own_group()
        .spawn();
    let _ = signals.thread_block();
    drop(watched);
    drop(filter);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("codehands box: {e} (install bubblewrap: apt-get install bubblewrap)");
            return CANNOT_START;
        }
    };
    let bwrap = child.id();
    std::thread::spawn(move || pass_on_stops(signals, bwrap));
    let watchdog = Arc::new(crate::watchdog::Shared::default());
    {
        let watchdog = watchdog.clone();
        std::thread::spawn(move || crate::watchdog::watch(bwrap, &watchdog));
    }
    let status = child.wait();
    watchdog.done.store(true, Ordering::Relaxed);
    if let Some(verdict) = watchdog.verdict.get() {
        eprintln!("{}", verdict.message());
        return crate::watchdog::WATCHDOG_EXIT;
    }
    match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(CANNOT_START)
        }
        Err(_) => CANNOT_START,
    }
}

/// The box's system call filter in a memory file, at its start and open across `exec`
/// for bubblewrap (which reads it to the end and closes it before the init starts).
fn seccomp_file(plan: &BoxPlan) -> Result<File, String> {
    use nix::sys::memfd::{MFdFlags, memfd_create};
    use std::io::{Seek, Write};
    let policy = crate::seccomp::Policy::for_box(plan.nested_sandbox);
    let bytes = crate::seccomp::to_bytes(&crate::seccomp::program(policy)?);
    let cannot =
        |e: &dyn std::fmt::Display| format!("cannot hand the box its system call filter: {e}");
    let fd =
        memfd_create(crate::seccomp::MEMFD_NAME, MFdFlags::MFD_CLOEXEC).map_err(|e| cannot(&e))?;
    let mut file = File::from(fd);
    file.write_all(&bytes).map_err(|e| cannot(&e))?;
    file.rewind().map_err(|e| cannot(&e))?;
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    fcntl(&file, FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| cannot(&e))?;
    Ok(file)
}

/// Passes each stop signal to the box's init (bubblewrap's child), which passes it to every
/// process in the box; before the init exists, ends bubblewrap (and so the box).
fn pass_on_stops(signals: nix::sys::signal::SigSet, bwrap: u32) {
    while let Ok(signal) = signals.wait() {
        match child_of(bwrap) {
            Some(init) => {
                let _ = kill(Pid::from_raw(init as i32), signal);
            }
            None => {
                let _ = killpg(Pid::from_raw(bwrap as i32), Signal::SIGKILL);
            }
        }
    }
}

/// A live child of `parent`, from `/proc`.
pub(crate) fn child_of(parent: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"));
    if let Ok(text) = children
        && let Some(pid) = text.split_whitespace().find_map(|p| p.parse().ok())
    {
        return Some(pid);
    }
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let rest = stat.get(stat.rfind(')')? + 1..)?;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
}

/// Makes the box's files and binds its sockets; returns each listener with its destination.
pub fn prepare(plan: &BoxPlan) -> Result<Vec<(UnixListener, Destination)>, String> {
    let run_dir = plan
        .state
        .parent()
        .ok_or("the box's folder has no parent")?;
    let root = PrivateRoot::new(run_dir);
    for dir in [&plan.state, &plan.home, &plan.tmp] {
        root.ensure_dir(dir).map_err(|e| e.to_string())?;
    }
    crate::etc::fill(&root, plan)?;
    for login in &plan.login {
        place_login(&root, &plan.home, login)?;
    }
    remove_sockets(plan)?;
    root.ensure_dir(&plan.sockets_dir())
        .map_err(|e| e.to_string())?;
    // Bound through the folder's descriptor: a socket's path may be at most 107 bytes, and
    // a run's folder may be deep.
    let dir = File::open(plan.sockets_dir())
        .map_err(|e| format!("cannot open {}: {e}", plan.sockets_dir().display()))?;
    plan.network
        .endpoints
        .iter()
        .map(|endpoint| {
            let path = format!("/proc/self/fd/{}/{}", dir.as_raw_fd(), endpoint.socket);
            UnixListener::bind(&path)
                .map(|l| (l, endpoint.to.clone()))
                .map_err(|e| format!("cannot make the socket {}: {e}", endpoint.socket))
        })
        .collect()
}

/// Removes the sockets a box (this one, or one a crash left) made.
pub fn remove_sockets(plan: &BoxPlan) -> Result<(), String> {
    let dir = plan.sockets_dir();
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot remove {}: {e}", dir.display())),
        Ok(_) => {
            std::fs::remove_file(&dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))
        }
        Err(_) => Ok(()),
    }
}

/// Serves the connections of one socket: each goes to the one destination it allows.
fn serve(listener: UnixListener, to: &Destination) {
    for conn in listener.incoming().flatten() {
        let to = to.clone();
        std::thread::spawn(move || match to {
            Destination::Direct(target) => {
                if let Some(upstream) = crate::proxy::connect(&target) {
                    crate::relay::pump(conn, upstream);
                }
            }
            Destination::Proxy(allow) => crate::proxy::serve(conn, &allow),
        });
    }
}

/// Puts one login file in the private home: a copy made once, or an empty file that
/// bubblewrap binds the caller's file over.
///
/// The private home was the agent's in earlier turns: every folder on the way is made a
/// real folder (a link the agent left is removed, never followed), so neither the copy nor
/// bubblewrap's mount point can be steered outside the home.
fn place_login(root: &PrivateRoot, home: &Path, login: &LoginFile) -> Result<(), String> {
    let rel = login
        .dest
        .strip_prefix(home)
        .map_err(|_| format!("{} is outside the private home", login.dest.display()))?;
    let mut dir = home.to_owned();
    let parts: Vec<Component<'_>> = rel.components().collect();
    let Some((_file, folders)) = parts.split_last() else {
        return Err("a login file without a name".into());
    };
    for part in folders {
        dir.push(part);
        make_real_dir(&dir)?;
    }
    let meta = std::fs::symlink_metadata(&login.dest);
    let kept = matches!(&meta, Ok(m) if m.file_type().is_file());
    if let Ok(meta) = meta
        && !kept
    {
        remove_any(&login.dest, &meta)?;
    }
    if kept && login.how == LoginHow::Copy {
        // The agent's copy, kept across turns.
        return Ok(());
    }
    let mut file = match root.create_new(&login.dest) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(format!("cannot make {}: {e}", login.dest.display())),
    };
    if login.how == LoginHow::Copy {
        let bytes = std::fs::read(&login.source)
            .map_err(|e| format!("cannot read {}: {e}", login.source.display()))?;
        std::io::Write::write_all(&mut file, &bytes)
            .map_err(|e| format!("cannot write {}: {e}", login.dest.display()))?;
    }
    Ok(())
}

/// Makes `dir` a real folder of ours: a link or a file there is removed first.
fn make_real_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(meta) => remove_any(dir, &meta)?,
        Err(_) => {}
    }
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))
}

/// Removes whatever is at `path` without following a link.
fn remove_any(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.map_err(|e| format!("cannot remove {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::sample;

    /// A plan whose run folder is a temp folder, with the two sample login files made.
    fn plan_in(dir: &Path) -> BoxPlan {
        let mut plan = sample();
        let run = dir.join("run");
        plan.state = run.join("box");
        plan.home = run.join("home");
        plan.tmp = run.join("tmp");
        let caller = dir.join("caller");
        std::fs::create_dir_all(caller.join(".agent")).unwrap();
        std::fs::write(caller.join(".agent/credentials.json"), "secret").unwrap();
        std::fs::write(caller.join(".agent.json"), "{\"settings\":1}").unwrap();
        plan.login[0].source = caller.join(".agent/credentials.json");
        plan.login[0].dest = plan.home.join(".agent/credentials.json");
        plan.login[1].source = caller.join(".agent.json");
        plan.login[1].dest = plan.home.join(".agent.json");
        plan
    }

    #[test]
    fn prepare_makes_the_home_etc_files_login_and_sockets() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_in(dir.path());
        let listeners = prepare(&plan).unwrap();
        assert_eq!(listeners.len(), 1);
        assert!(plan.sockets_dir().join("0.sock").exists());
        let passwd = std::fs::read_to_string(plan.etc_dir().join("passwd")).unwrap();
        assert!(passwd.contains(&plan.home.display().to_string()));
        let mount_point = std::fs::read(plan.home.join(".agent/credentials.json")).unwrap();
        assert!(
            mount_point.is_empty(),
            "bwrap binds the caller's file over it"
        );
        assert_eq!(
            std::fs::read_to_string(plan.home.join(".agent.json")).unwrap(),
            "{\"settings\":1}"
        );
    }

    #[test]
    fn the_agents_copy_is_kept_across_turns() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_in(dir.path());
        drop(prepare(&plan).unwrap());
        std::fs::write(plan.home.join(".agent.json"), "changed by the agent").unwrap();
        drop(prepare(&plan).unwrap());
        assert_eq!(
            std::fs::read_to_string(plan.home.join(".agent.json")).unwrap(),
            "changed by the agent"
        );
    }

    #[test]
    fn links_the_agent_left_in_its_home_are_removed_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_in(dir.path());
        drop(prepare(&plan).unwrap());
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        // A folder on the way and a copy's place, both links out of the home.
        std::fs::remove_dir_all(plan.home.join(".agent")).unwrap();
        std::os::unix::fs::symlink(&outside, plan.home.join(".agent")).unwrap();
        std::fs::remove_file(plan.home.join(".agent.json")).unwrap();
        std::os::unix::fs::symlink(outside.join("planted"), plan.home.join(".agent.json")).unwrap();
        drop(prepare(&plan).unwrap());
        assert!(
            std::fs::read_dir(&outside).unwrap().next().is_none(),
            "nothing made outside"
        );
        assert!(
            std::fs::symlink_metadata(plan.home.join(".agent"))
                .unwrap()
                .is_dir()
        );
        assert!(
            std::fs::symlink_metadata(plan.home.join(".agent.json"))
                .unwrap()
                .is_file()
        );
    }

    #[test]
    fn a_long_run_folder_still_gets_its_sockets() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(100)).join("e".repeat(60));
        let plan = plan_in(&deep);
        assert!(plan.sockets_dir().join("0.sock").as_os_str().len() > 108);
        let listeners = prepare(&plan).unwrap();
        assert_eq!(listeners.len(), 1);
        remove_sockets(&plan).unwrap();
        assert!(!plan.sockets_dir().exists());
    }
}
