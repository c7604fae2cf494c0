//! `codehands __remote-init WORKTREE log|keep [--forward LISTEN=HOST:PORT]… -- PROGRAM ARGS…`:
//! the agent's start inside a remote box. It takes the box's inputs (and deletes the file they came in, so the agent's
//! env exists only in the agent's own process), checks and unpacks the base tree into the
//! worktree, runs the agent there with its env and prompt, and with `log` prints the result
//! tree on stderr for the shim (`frame`), since a swarm's caller may not reach the node.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::frame::{NONCE_VAR, read_inputs, result_lines};
use crate::plan::{BOX_DIR, BOX_FILES, BOX_HOME};

/// Where an engine uploads the inputs.
pub const INPUTS_FILE: &str = "/box/in/inputs.tar";
/// Where a swarm mounts the inputs' chunks (secrets, sorted by name).
pub const SECRETS_DIR: &str = "/run/secrets";
/// The name every chunk secret's file starts with.
pub const SECRET_PREFIX: &str = "codehands-in-";

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
    const USAGE: &str =
        "usage: __remote-init WORKTREE log|keep [--forward LISTEN=HOST:PORT]… -- PROGRAM ARGS…";
    let [worktree, mode, rest @ ..] = args else {
        return Err(USAGE.to_owned());
    };
    let mut rest = rest;
    let mut forwards = Vec::new();
    while let [flag, forward, more @ ..] = rest {
        if flag != "--forward" {
            break;
        }
        let forward = forward.to_str().ok_or(USAGE)?;
        forwards.push(crate::egress::tunnel::parse_forward(forward)?);
        rest = more;
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
    let mut child = Command::new(program)
        .args(rest)
        .env_clear()
        .env("HOME", BOX_HOME)
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .envs(env)
        .current_dir(&worktree)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot start the agent {}: {e} (is it in the image?)",
                Path::new(program).display()
            )
        })?;
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
    if mode == "log" {
        let nonce = nonce.ok_or("no nonce for the result")?;
        let tar = remote_transfer::pack_tree(&worktree, &limits)
            .map_err(|e| format!("the result: {e}"))?;
        let mut err = std::io::stderr().lock();
        for line in result_lines(&nonce, &tar) {
            let _ = writeln!(err, "{line}");
        }
    }
    Ok(code)
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
