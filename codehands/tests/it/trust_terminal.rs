//! The command line at a trust boundary (issue 19): the agent's text never drives the
//! person's terminal, and an argument that is not UTF-8 gets a clear error, not a panic.

use crate::support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output, Stdio};

use support::World;

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .stdin(Stdio::null());
    cmd
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

#[test]
fn the_human_view_shows_escape_sequences_instead_of_obeying_them() {
    let world = World::demo();
    let script = world.dir.path().join("escapes.jsonl");
    let init = r#"{"type":"system","subtype":"init","cwd":"/x","session_id":"s","tools":[],"model":"m\u001b[8m"}"#;
    let message = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi \u001b]0;pwned\u0007\u001b[2J\u009b31m \u202eevil\r done"}],"role":"assistant"},"session_id":"s"}"#;
    let result =
        r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}"#;
    std::fs::write(&script, format!("{init}\n{message}\n{result}\n")).unwrap();
    let out = output(
        codehands(&world)
            .env("CODEHANDS_FAKE_MODE", "verbatim")
            .env("CODEHANDS_FAKE_SCRIPT", &script)
            .args(["run", ".", "Say hi.", "--agent", "fake", "--then", "reject"]),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\r'] {
        assert!(
            !stdout.contains(bad),
            "{bad:?} reached the terminal: {stdout:?}"
        );
    }
    let line = stdout
        .lines()
        .find(|l| l.contains("pwned"))
        .unwrap_or_else(|| panic!("the message is shown: {stdout}"));
    assert!(
        line.contains("\\x1b]0;pwned\\x07\\x1b[2J"),
        "the sequence is made visible: {line}"
    );
}

#[test]
fn an_argument_that_is_not_utf8_is_named_in_a_clear_error() {
    let world = World::demo();
    let bad = OsStr::from_bytes(b"repo-\xff\xfe");
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![OsStr::new("run"), bad, OsStr::new("Fix it")],
        vec![OsStr::new("run"), OsStr::new("."), bad],
        vec![OsStr::new("diff"), bad],
        vec![OsStr::new("run"), OsStr::new("--model"), bad],
    ];
    for args in cases {
        let out = output(codehands(&world).args(&args));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("not UTF-8") && stderr.contains("repo-\\xFF\\xFE"),
            "the error names the argument: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
