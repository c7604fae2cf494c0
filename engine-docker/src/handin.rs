//! A warm box's side of the hand-in (docs/remote-box.md, "Warm boxes"): the box was started
//! ahead of any run with `__remote-init --wait` and its stdin open, and waits on that stdin. A
//! run takes it by attaching to the box (one API call, no process started in the box): it
//! writes a claim line with a token of its own, the box names the first claim's token on its
//! stderr, and only the run so named sends its inputs and the init's arguments (no other run's
//! inputs ever reach the box). The box then leaves the inputs where the init reads them, says
//! so, and the init runs as a box made for the run would; the run's output comes back through
//! the same attach. The box takes no second run.

use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::time::Duration;

use crate::init::INPUTS_FILE;

/// The init's argument that makes a box wait for its run.
pub const WAIT_FLAG: &str = "--wait";
/// The folder a run's inputs go to.
pub const HANDIN_DIR: &str = "/box/in";
/// What a run writes to take the box, then a space and its token.
pub const CLAIM: &str = "codehands-claim";
/// What the box says (on stderr) once a run's claim is the one it took, then its token.
pub const CLAIMED: &str = "codehands-claimed";
/// What the box says (on stderr) once the inputs and arguments are in place, then the token.
pub const HANDED: &str = "codehands-handed";
/// The most a hand-in may weigh (the inputs tar), in bytes.
const INPUTS_CAP: u64 = 4 << 30;
/// The most the init's arguments may weigh (JSON), in bytes.
const COMMAND_CAP: u64 = 1 << 20;
/// How long a claimed box waits for its inputs: a run that claimed and went away leaves a box
/// that exits (failed: the swarm starts a fresh one in its place) rather than one that waits on.
const INPUTS_LIMIT: Duration = Duration::from_secs(120);

/// Whether `token` is one a run makes: 32 hex digits (a line of the box's own never is one).
pub fn is_token(token: &str) -> bool {
    token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Waits on stdin for a run to take the box; the init's arguments it brought (its inputs are
/// then at [`INPUTS_FILE`]).
pub fn wait() -> Result<Vec<OsString>, String> {
    let mut stdin = std::io::stdin().lock();
    let token = loop {
        let mut line = Vec::new();
        let read = (&mut stdin)
            .take(256)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("waiting for a run: {e}"))?;
        if read == 0 {
            return Err("no run came: the box's stdin ended".to_owned());
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(token) = text.trim().strip_prefix(CLAIM).map(str::trim)
            && is_token(token)
        {
            break token.to_owned();
        }
    };
    // A run that claimed and sent nothing more: the box fails, and the swarm replaces it. Once
    // the inputs are in (`received` dropped), the agent runs as long as it takes.
    let (received, inputs_in) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            inputs_in.recv_timeout(INPUTS_LIMIT)
        {
            eprintln!("codehands box: the run that took the box sent no inputs");
            std::process::exit(1);
        }
    });
    say(&format!("{CLAIMED} {token}"))?;
    // Callers that raced for the box wrote their claims too, after the one taken: their lines
    // come before the inputs' lengths and are skipped (those callers, not named, send nothing).
    let sizes = loop {
        let mut line = String::new();
        (&mut stdin)
            .take(256)
            .read_line(&mut line)
            .map_err(|e| format!("the inputs' length: {e}"))?;
        if !line.starts_with(CLAIM) {
            break line;
        }
    };
    let sizes: Vec<u64> = sizes
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| "the inputs' length is not a number")?;
    let [len, command_len] = sizes[..] else {
        return Err("the inputs' length and the arguments' are missing".to_owned());
    };
    if len > INPUTS_CAP || command_len > COMMAND_CAP {
        return Err("the inputs or the arguments are over the cap".to_owned());
    }
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(HANDIN_DIR)
            .map_err(|e| format!("cannot make {HANDIN_DIR}: {e}"))?;
    }
    let mut file = std::fs::File::create(INPUTS_FILE)
        .map_err(|e| format!("cannot write {INPUTS_FILE}: {e}"))?;
    let copied = std::io::copy(&mut (&mut stdin).take(len), &mut file)
        .map_err(|e| format!("receiving the inputs: {e}"))?;
    if copied != len {
        return Err(format!("the inputs ended after {copied} of {len} bytes"));
    }
    drop(file);
    let mut json = Vec::new();
    (&mut stdin)
        .take(command_len)
        .read_to_end(&mut json)
        .map_err(|e| format!("receiving the arguments: {e}"))?;
    let args: Vec<String> = serde_json::from_slice(&json)
        .map_err(|e| format!("the run's arguments are unreadable: {e}"))?;
    drop(received);
    // The box's stdin goes before the agent starts: no later caller's claim reaches the box,
    // and nothing in the box (the agent reading `/proc/1/fd/0`) reads one.
    drop(stdin);
    let null =
        std::fs::File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
    nix::unistd::dup2_stdin(&null).map_err(|e| format!("cannot close the box's stdin: {e}"))?;
    say(&format!("{HANDED} {token}"))?;
    Ok(args.into_iter().map(OsString::from).collect())
}

/// One line of the hand-in on stderr (the attach's caller reads it; the shim takes such lines
/// out of the run's transcript).
fn say(line: &str) -> Result<(), String> {
    let mut err = std::io::stderr().lock();
    writeln!(err, "{line}")
        .and_then(|()| err.flush())
        .map_err(|e| format!("cannot answer the run: {e}"))
}

/// Whether `line` (without its newline) is one of the box's hand-in answers.
pub(crate) fn is_answer(line: &str) -> bool {
    [CLAIMED, HANDED].iter().any(|word| {
        line.strip_prefix(word)
            .and_then(|rest| rest.strip_prefix(' '))
            .is_some_and(is_token)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_boxs_own_answers_with_a_runs_token_are_answers() {
        let token = "0123456789abcdef0123456789abcdef";
        assert!(is_answer(&format!("{CLAIMED} {token}")));
        assert!(is_answer(&format!("{HANDED} {token}")));
        assert!(
            !is_answer(&format!("{CLAIM} {token}")),
            "a claim is the run's"
        );
        assert!(!is_answer(&format!("{HANDED} {token} and more")));
        assert!(!is_answer(&format!("{HANDED}  {token}")));
        assert!(!is_answer(&format!("{HANDED} not-a-token")));
        assert!(!is_answer("the agent's own line"));
    }
}
