//! A warm box's side of the hand-in (docs/remote-box.md, "Warm boxes"): the box was started
//! ahead of any run with `__remote-init --wait`, and waits; a run takes it by running
//! `codehands __remote-take INIT-ARGS…` in it (an exec on the box's node), which claims the
//! box (the first taker only: `mkdir` is the lock), receives the inputs on its stdin and leaves
//! them with the init's arguments where the waiting init finds them. The init then runs as a
//! box made for the run would; the box takes no second run.

use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::init::INPUTS_FILE;

/// The init's argument that makes a box wait for its run.
pub const WAIT_FLAG: &str = "--wait";
/// The folder a run's hand-in goes to; whoever makes it has the box.
pub const HANDIN_DIR: &str = "/box/in";
/// The init's arguments for the run, as a JSON array of strings.
pub const COMMAND_FILE: &str = "/box/in/command.json";
/// What the taker says once the box is its run's.
pub const CLAIMED: &str = "codehands-claimed";
/// What the taker says when another run has the box.
pub const TAKEN: &str = "codehands-taken";
/// What the taker says once the inputs and arguments are in place.
pub const HANDED: &str = "codehands-handed";
/// The exit code of a taker that found the box taken.
pub const TAKEN_EXIT: i32 = 3;
/// The most a hand-in may weigh (the inputs tar), in bytes.
const INPUTS_CAP: u64 = 4 << 30;
/// How often a waiting box looks for its run: a run's hand-in reaches its init this much
/// later at most.
const POLL: Duration = Duration::from_millis(20);

/// Waits for a run's hand-in; the init's arguments it brought.
pub fn wait() -> Result<Vec<OsString>, String> {
    loop {
        match std::fs::read(COMMAND_FILE) {
            Ok(bytes) => {
                let _ = std::fs::remove_file(COMMAND_FILE);
                let args: Vec<String> = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("the run's arguments are unreadable: {e}"))?;
                return Ok(args.into_iter().map(OsString::from).collect());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::thread::sleep(POLL),
            Err(e) => return Err(format!("cannot read {COMMAND_FILE}: {e}")),
        }
    }
}

/// `codehands __remote-take INIT-ARGS…` in a warm box, the inputs on stdin (their length in
/// bytes on the first line, then the bytes): 0 once handed in, [`TAKEN_EXIT`] when another
/// run has the box.
pub fn take_main(args: &[OsString]) -> i32 {
    match take(args) {
        Ok(true) => 0,
        Ok(false) => TAKEN_EXIT,
        Err(e) => {
            eprintln!("codehands __remote-take: {e}");
            1
        }
    }
}

fn take(args: &[OsString]) -> Result<bool, String> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or("the init's arguments are not UTF-8")?;
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock<'_>, what: &str| {
        writeln!(out, "{what}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())
    };
    match std::fs::create_dir(HANDIN_DIR) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            say(&mut out, TAKEN)?;
            return Ok(false);
        }
        Err(e) => return Err(format!("cannot claim the box: {e}")),
    }
    say(&mut out, CLAIMED)?;
    let mut stdin = std::io::stdin().lock();
    let mut first = String::new();
    stdin
        .read_line(&mut first)
        .map_err(|e| format!("the inputs' length: {e}"))?;
    let len: u64 = first
        .trim()
        .parse()
        .ok()
        .filter(|n| *n <= INPUTS_CAP)
        .ok_or("the inputs' length is missing or over the cap")?;
    let part = format!("{INPUTS_FILE}.part");
    let mut file = std::fs::File::create(&part).map_err(|e| format!("cannot write {part}: {e}"))?;
    let copied = std::io::copy(&mut stdin.by_ref().take(len), &mut file)
        .map_err(|e| format!("receiving the inputs: {e}"))?;
    if copied != len {
        return Err(format!("the inputs ended after {copied} of {len} bytes"));
    }
    drop(file);
    std::fs::rename(&part, INPUTS_FILE).map_err(|e| e.to_string())?;
    // The arguments last: the waiting init starts once they are there.
    let command = format!("{COMMAND_FILE}.part");
    let json = serde_json::to_vec(&args).map_err(|e| e.to_string())?;
    std::fs::write(&command, json).map_err(|e| format!("cannot write {command}: {e}"))?;
    std::fs::rename(&command, Path::new(COMMAND_FILE)).map_err(|e| e.to_string())?;
    say(&mut out, HANDED)?;
    Ok(true)
}
