//! The fake agent program: it stands in for the `claude` CLI on a machine
//! without one. It takes Claude Code's arguments, reads the prompt from stdin, and
//! replays a recording of the real CLI's stream-json output, performing the
//! recording's Write, Edit and MultiEdit calls in its working folder so that
//! diff and approve have a real change. Other modes misbehave on purpose, for
//! the runner's tests (sleep, children that ignore SIGTERM, no output, garbage,
//! a result and then no exit), or print a script's lines exactly as written
//! (`verbatim`: what a real agent may print that a JSON encoder would not, such as
//! escapes, reaches the runner as it is).
//!
//! It is configured by its environment, which the runner builds from scratch:
//! `CODEHANDS_FAKE_MODE`, `CODEHANDS_FAKE_SCRIPT` (a recording to replay instead
//! of the embedded one) and `CODEHANDS_FAKE_DELAY_MS` (a pause between lines).

mod apply;
mod replay;

use std::io::{Read, Write};
use std::time::Duration;

/// The recording replayed by default: the real Claude Code 2.1.332 fixing the
/// date bug of `codehands demo`'s repo, driven by the scripted model server.
pub const DATE_BUG_RECORDING: &str = include_str!("../../recordings/date-bug.jsonl");

/// How the fake agent behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeMode {
    /// Replay the recording, then exit (like Claude Code).
    Replay,
    /// Print the init line, then sleep until killed.
    Sleep,
    /// Start children that ignore SIGTERM, then sleep.
    ForkIgnoringTerm,
    /// Print the init line, then nothing, and never exit.
    Silent,
    /// Print lines that are not JSON (and not UTF-8) among the recording.
    Garbage,
    /// Replay the recording, then never exit.
    Linger,
    /// Print the init line, write to stderr, and exit 3 without a result.
    NoResult,
    /// Print each line of the script exactly as written (a line starting with
    /// [`STDERR_MARK`] goes to stderr without the mark), perform nothing, exit 0.
    Verbatim,
}

/// In `verbatim` mode, a script line starting with this goes to stderr.
pub const STDERR_MARK: &str = "!stderr ";

impl FakeMode {
    /// The mode named by `CODEHANDS_FAKE_MODE` (`replay` when unset).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "" | "replay" => Self::Replay,
            "sleep" => Self::Sleep,
            "fork" => Self::ForkIgnoringTerm,
            "silent" => Self::Silent,
            "garbage" => Self::Garbage,
            "linger" => Self::Linger,
            "no-result" => Self::NoResult,
            "verbatim" => Self::Verbatim,
            _ => return None,
        })
    }

    /// The name `CODEHANDS_FAKE_MODE` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Replay => "replay",
            Self::Sleep => "sleep",
            Self::ForkIgnoringTerm => "fork",
            Self::Silent => "silent",
            Self::Garbage => "garbage",
            Self::Linger => "linger",
            Self::NoResult => "no-result",
            Self::Verbatim => "verbatim",
        }
    }
}

/// Runs the fake agent with Claude Code's arguments; returns the exit code.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = args.as_slice();
    let mode_name = std::env::var("CODEHANDS_FAKE_MODE").unwrap_or_default();
    let Some(mode) = FakeMode::parse(&mode_name) else {
        eprintln!("fake agent: unknown CODEHANDS_FAKE_MODE {mode_name:?}");
        return 2;
    };
    let recording = match std::env::var_os("CODEHANDS_FAKE_SCRIPT") {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!(
                    "fake agent: cannot read the recording {}: {e}",
                    std::path::Path::new(&path).display()
                );
                return 2;
            }
        },
        None => DATE_BUG_RECORDING.to_owned(),
    };
    let delay = std::env::var("CODEHANDS_FAKE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::ZERO, Duration::from_millis);
    let session_id = flag_value(args, "--session-id")
        .or_else(|| flag_value(args, "--resume"))
        .unwrap_or_default();
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut player = replay::Player::new(&recording, &cwd, &session_id, delay);

    // Like Claude Code with --input-format text: the prompt is all of stdin, and nothing
    // happens before stdin closes.
    let mut prompt = String::new();
    if std::io::stdin().read_to_string(&mut prompt).is_err() || prompt.trim().is_empty() {
        eprintln!("fake agent: no prompt on stdin");
        return 1;
    }

    match mode {
        Mode::Replay | Mode::Garbage | Mode::Linger => {
            if mode == Mode::Garbage {
                emit_raw(b"this line is not JSON\n");
                emit_raw(b"\xff\xfe not UTF-8 either\n");
            }
            if let Err(e) = player.play_all() {
                eprintln!("fake agent: {e}");
                return 1;
            }
            if mode == Mode::Linger {
                sleep_forever();
            }
            0
        }
        Mode::Sleep => {
            let _ = player.play_init();
            sleep_forever()
        }
        Mode::ForkIgnoringTerm => {
            let _ = player.play_init();
            for _ in 0..2 {
                let _ = runner_process::foreground::Foreground::new("sh")
                    .args(["-c", "trap '' TERM; sleep 600"])
                    .spawn();
            }
            sleep_forever()
        }
        Mode::Silent => {
            let _ = player.play_init();
            sleep_forever()
        }
        Mode::NoResult => {
            let _ = player.play_init();
            eprintln!("fake agent: giving up without a result (no-result mode)");
            3
        }
        Mode::Verbatim => {
            for line in recording.lines() {
                match line.strip_prefix(STDERR_MARK) {
                    Some(text) => eprintln!("{text}"),
                    None => emit_raw(format!("{line}\n").as_bytes()),
                }
            }
            0
        }
    }
}

use FakeMode as Mode;

fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn emit_raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
