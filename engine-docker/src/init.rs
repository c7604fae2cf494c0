//! `codehands __remote-init WORKTREE log|keep [--forward LISTEN=HOST:PORT]… [--user UID:GID]
//! [--nested-sandbox] [--root DIR] -- PROGRAM ARGS…` (or `__remote-init --wait`: a warm box, whose
//! arguments are handed in with its inputs, `handin`):
//! the agent's start inside a remote box. It takes the box's inputs (and deletes the file they came in, so the agent's
//! env exists only in the agent's own process), checks and unpacks the base tree into the
//! worktree, runs the agent there with its env and prompt, and with `log` prints the result
//! tree on stderr for the shim (`frame`), since a swarm's caller may not reach the node.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use runner_process::foreground::Foreground;

use crate::frame::{NONCE_VAR, read_inputs, result_lines};
use crate::plan::{BOX_DIR, BOX_FILES, BOX_HOME};

/// Where an engine uploads the inputs.
pub const INPUTS_FILE: &str = "/box/in/inputs.tar";
/// Where a swarm mounts the inputs' chunks (secrets, sorted by name).
pub const SECRETS_DIR: &str = "/run/secrets";
/// The name every chunk secret's file starts with.
pub const SECRET_PREFIX: &str = "codehands-in-";

/// The agent's program: by name on `path`; in the person's image (`own_root`), one of our
/// image's that the image lacks (the fake agent, Claude Code) runs through our loader.
fn agent_command(program: &Path, path: &str, own_root: bool) -> Foreground {
    let name = program.to_str().filter(|n| !n.contains('/'));
    let on_path = |name: &str| std::env::split_paths(path).any(|dir| dir.join(name).is_file());
    match name {
        Some(name) if own_root && !on_path(name) => {
            let ours = crate::plan::own_program(name);
            let own = Path::new(&ours[3]).is_file();
            if own {
                let mut command = Foreground::new(&ours[0]);
                command.args(&ours[1..]);
                return command;
            }
            Foreground::new(program)
        }
        _ => Foreground::new(program),
    }
}

/// Runs the init; the exit code is the agent's (128 + the signal that ended it), or 125 when
/// the box could not be set up.
pub fn main(args: &[OsString]) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("codehands box: {message}");
            125
        }
    }
}

fn run(args: &[OsString]) -> Result<i32, String> {
    // A warm box: its run's command and inputs are handed in once a run takes it.
    if let [wait] = args
        && wait == crate::handin::WAIT_FLAG
    {
        // Its task ends well once the run's exit line is out (the code travels in it): the
        // swarm starts again only a box that failed before its run (its restart policy),
        // never one whose run is over.
        return run(&crate::handin::wait()?).map(|_| 0);
    }
    const USAGE: &str = "usage: __remote-init WORKTREE log|keep [--forward LISTEN=HOST:PORT]… [--user UID:GID] \
         [--nested-sandbox] -- PROGRAM ARGS…";
    let [worktree, mode, rest @ ..] = args else {
        return Err(USAGE.to_owned());
    };
    let mut rest = rest;
    let mut forwards = Vec::new();
    // `--root DIR`: the box is the person's image, with ours under DIR (`plan::OWN_ROOT`).
    let mut own_root = false;
    let mut user = None;
    let mut nested = false;
    loop {
        match rest {
            [flag, more @ ..] if flag == "--nested-sandbox" => {
                nested = true;
                rest = more;
            }
            [flag, value, more @ ..] if flag == "--forward" => {
                let forward = value.to_str().ok_or(USAGE)?;
                forwards.push(crate::egress::tunnel::parse_forward(forward)?);
                rest = more;
            }
            [flag, value, more @ ..] if flag == "--user" => {
                user = Some(value.to_str().ok_or(USAGE)?.to_owned());
                rest = more;
            }
            [flag, value, more @ ..] if flag == "--root" && value == crate::plan::OWN_ROOT => {
                own_root = true;
                rest = more;
            }
            _ => break,
        }
    }
    let [dashes, program, rest @ ..] = rest else {
        return Err(USAGE.to_owned());
    };
    if dashes != "--" {
        return Err(USAGE.to_owned());
    }
    // Before the agent starts, so its first connection finds the listener.
    crate::egress::tunnel::start(&forwards)?;
    let worktree = PathBuf::from(worktree);
    let crate::frame::Inputs {
        mut env,
        stdin,
        base,
        files,
        home,
        login,
    } = read_inputs(&take_inputs()?)?;
    write_files(&files)?;
    let nonce = env
        .iter()
        .find(|(k, _)| k == NONCE_VAR)
        .map(|(_, v)| v.clone());
    env.retain(|(k, _)| k != NONCE_VAR && k != "HOME" && k != "PATH");
    let limits = remote_transfer::Limits::default();
    let tree = remote_transfer::read_result(&base, None, &limits)
        .map_err(|e| format!("the base tree: {e}"))?;
    std::fs::create_dir_all(&worktree)
        .map_err(|e| format!("cannot make {}: {e}", worktree.display()))?;
    remote_transfer::apply(&tree, &worktree).map_err(|e| format!("the base tree: {e}"))?;
    std::fs::create_dir_all(BOX_HOME).map_err(|e| format!("cannot make {BOX_HOME}: {e}"))?;
    restore_home(&home);
    write_login(&login)?;
    // Last before the agent: the box's folders become its user's, the init drops to that user
    // and confines itself (docs/remote-box.md, "The box's kernel settings").
    let read_only: Vec<PathBuf> = login
        .iter()
        .filter(|l| l.read_only)
        .map(|l| Path::new(BOX_HOME).join(&l.path))
        .collect();
    crate::security::confine_init(
        user.as_deref(),
        nested,
        &[Path::new(BOX_DIR), worktree.as_path()],
        &read_only,
    )?;
    // The image's own env (a toolchain's `JAVA_HOME`, its PATH) under the agent's.
    let path = std::env::var("PATH").unwrap_or_else(|_| crate::plan::DEFAULT_PATH.to_owned());
    let mut command = agent_command(Path::new(program), &path, own_root);
    let mut child = command
        .args(rest)
        .env_clear()
        .envs(std::env::vars_os())
        .env("HOME", BOX_HOME)
        .env("PATH", &path)
        .envs(env)
        .current_dir(&worktree)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the agent: {e} (is it in the image?)"))?;
    if let Some(mut pipe) = child.stdin.take() {
        // A thread, so an agent that prints before it reads all of its prompt never blocks us.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&stdin);
        });
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the agent: {e}"))?;
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    // A read-only login file is handed in each turn, never sent back with the home.
    for file in login.iter().filter(|l| l.read_only) {
        let _ = std::fs::remove_file(Path::new(BOX_HOME).join(&file.path));
    }
    let home = save_home();
    if mode == "log" {
        let nonce = nonce.ok_or("no nonce for the result")?;
        let tar = remote_transfer::pack_tree(&worktree, &limits)
            .map_err(|e| format!("the result: {e}"))?;
        // The agent shared our stderr, and a Node or Bun agent leaves it non-blocking: a
        // write to a full pipe would then fail and the result lose its lines (seen with
        // Claude Code past 64 KiB).
        blocking_stderr();
        // Stdout's last line: what the agent printed has all gone before it.
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", crate::frame::stdout_end_line(&nonce))
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot end the output: {e}"))?;
        drop(out);
        let mut err = std::io::stderr().lock();
        let mut lines = home
            .map(|home| result_lines(&crate::frame::home_nonce(&nonce), &home))
            .unwrap_or_default();
        lines.extend(result_lines(&nonce, &tar));
        lines.push(crate::frame::exit_line(&nonce, code));
        for line in lines {
            writeln!(err, "{line}").map_err(|e| format!("cannot send the result: {e}"))?;
        }
    }
    Ok(code)
}

/// Makes stdout and stderr blocking again, whatever the agent did to the file descriptions
/// it shared.
fn blocking_stderr() {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    fn blocking(fd: impl std::os::fd::AsFd) {
        if let Ok(bits) = fcntl(&fd, FcntlArg::F_GETFL) {
            let flags = OFlag::from_bits_truncate(bits);
            if flags.contains(OFlag::O_NONBLOCK) {
                let _ = fcntl(&fd, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK));
            }
        }
    }
    blocking(std::io::stdout());
    blocking(std::io::stderr());
}

/// Where the agent's home is left packed for an engine's shim to download.
pub const HOME_TAR: &str = "/box/home.tar";

/// The limits of the agent's home as it travels.
fn home_limits() -> remote_transfer::Limits {
    remote_transfer::Limits {
        max_bytes: crate::frame::HOME_CAP as u64,
        max_entries: 20_000,
        ..remote_transfer::Limits::default()
    }
}

/// The home the agent left in the box before, checked like a result; a home that fails the
/// checks is left out (the agent then starts without its earlier conversation), and said.
fn restore_home(home: &[u8]) {
    if home.is_empty() {
        return;
    }
    let restored = remote_transfer::read_result(home, None, &home_limits())
        .and_then(|tree| remote_transfer::apply(&tree, Path::new(BOX_HOME)));
    if let Err(e) = restored {
        eprintln!("codehands box: the agent's home from the turn before was left out: {e}");
    }
}

/// The agent's home, packed for the session's next turn (also at [`HOME_TAR`]); `None` when
/// it is over its limits (said).
fn save_home() -> Option<Vec<u8>> {
    match remote_transfer::pack_tree(Path::new(BOX_HOME), &home_limits()) {
        Ok(tar) => {
            let _ = std::fs::write(HOME_TAR, &tar);
            Some(tar)
        }
        Err(e) => {
            eprintln!("codehands box: the agent's home is not kept for a follow-up: {e}");
            None
        }
    }
}

/// The agent's login files in its home: read-only (0400), or a copy it may change (0600),
/// made on its first turn and kept.
fn write_login(login: &[crate::frame::LoginInput]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for file in login {
        let path = Path::new(BOX_HOME).join(&file.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
        // A copy is made once: the agent's own from the turn before stays. A read-only one
        // replaces what the home holds at its path.
        if !file.read_only && path.symlink_metadata().is_ok() {
            continue;
        }
        let _ = std::fs::remove_file(&path);
        let mode = if file.read_only { 0o400 } else { 0o600 };
        std::fs::write(&path, &file.bytes)
            .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)))
            .map_err(|e| format!("cannot write the login file {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The run's files, read-only under [`BOX_FILES`] (names checked by `read_inputs`).
fn write_files(files: &[(String, Vec<u8>)]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    if files.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(BOX_FILES).map_err(|e| format!("cannot make {BOX_FILES}: {e}"))?;
    for (name, bytes) in files {
        let path = Path::new(BOX_FILES).join(name);
        std::fs::write(&path, bytes)
            .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The inputs, from the uploaded file (deleted once read) or from the swarm's secrets.
fn take_inputs() -> Result<Vec<u8>, String> {
    if let Ok(bytes) = std::fs::read(INPUTS_FILE) {
        let _ = std::fs::remove_file(INPUTS_FILE);
        return Ok(bytes);
    }
    let mut names: Vec<PathBuf> = std::fs::read_dir(SECRETS_DIR)
        .map_err(|e| format!("no inputs in {BOX_DIR}/in nor {SECRETS_DIR}: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(SECRET_PREFIX))
        })
        .collect();
    names.sort();
    let mut bytes = Vec::new();
    for name in names {
        bytes.extend(
            std::fs::read(&name).map_err(|e| format!("cannot read {}: {e}", name.display()))?,
        );
    }
    Ok(bytes)
}
