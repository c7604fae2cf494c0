//! Small fake Claude programs: `#!/bin/sh` scripts, written once per test binary.
//!
//! They are all written before any test spawns one: a script still open for writing in
//! one thread while another thread forks would make its exec fail with "text file busy".
//! Each test passes its own folder as `$OUT` through the environment overlay.

#![allow(dead_code)] // each test target uses part of it

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use claude_lifecycle::{ClaudeRunner, Defaults, SessionEvent};
use tokio::sync::broadcast;

/// The session id the fakes print.
pub const SID: &str = "11111111-2222-4333-8444-555555555555";

const INIT: &str =
    r#"{"type":"system","subtype":"init","session_id":"11111111-2222-4333-8444-555555555555"}"#;

fn result(text: &str, is_error: bool) -> String {
    format!(
        r#"{{"type":"result","subtype":"success","is_error":{is_error},"result":"{text}","session_id":"{SID}"}}"#
    )
}

fn scripts() -> Vec<(&'static str, String)> {
    let ok = result("done", false);
    vec![
        // A job that answers its prompt.
        (
            "job-ok",
            format!("read -r line\necho '{INIT}'\necho '{ok}'\n"),
        ),
        // A job whose result says it failed.
        (
            "job-is-error",
            format!("read -r line\necho '{}'\n", result("it broke", true)),
        ),
        // A job that prints no JSON at all.
        (
            "job-not-json",
            "read -r line\necho 'this is not json'\necho '{\"type\":'\n".into(),
        ),
        // A good result, then a non-zero exit.
        ("job-exit-2", format!("read -r line\necho '{ok}'\nexit 2\n")),
        // The result is the last line and has no newline.
        (
            "job-unterminated",
            format!("read -r line\necho 'garbage'\nprintf '%s' '{ok}'\n"),
        ),
        // Writes down what it was given: argv, stdin, environment, folder.
        (
            "inspect",
            format!(
                "read -r line\nprintf '%s\\n' \"$line\" > \"$OUT/stdin\"\n\
                 for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$OUT/argv\"\n\
                 printf 'A=%s B=%s HOME=%s\\n' \"$A\" \"$B\" \"$HOME\" > \"$OUT/env\"\n\
                 pwd > \"$OUT/cwd\"\necho '{ok}'\n"
            ),
        ),
        // Never reads stdin; SIGTERM ends it.
        ("hang", "echo $$ > \"$OUT/pid\"\nexec sleep 30\n".into()),
        // Notes SIGTERM and goes on: only SIGKILL ends it.
        (
            "ignore-term",
            "echo $$ > \"$OUT/pid\"\ntrap 'echo term >> \"$OUT/signals\"' TERM\n\
             while :; do sleep 0.05; done\n"
                .into(),
        ),
        // A session: replays each input (marked as Claude marks it), answers it, ends its turn; exits 0 at the end of stdin.
        (
            "echo",
            format!(
                "echo $$ > \"${{OUT:-/tmp}}/pid\"\necho 'fake claude: starting' >&2\necho '{INIT}'\nn=0\n\
                 while IFS= read -r line; do\n  n=$((n+1))\n\
                 \x20 printf '%s\\n' \"$line\" >> \"${{OUT:-/tmp}}/inputs\"\n\
                 \x20 printf '%s\\n' \"$line\" | sed 's/}}$/,\"isReplay\":true}}/'\n\
                 \x20 echo '{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ack '$n'\"}}]}}}}'\n\
                 \x20 echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"turn '$n'\",\"session_id\":\"{SID}\"}}'\n\
                 done\n"
            ),
        ),
        // Broken lines between good ones, the last one unterminated, then exit 3.
        (
            "protocol",
            format!(
                "echo 'not json'\necho '{{\"no\":\"type\"}}'\nprintf '\\377\\376\\n'\n\
                 echo '{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"still here\"}}]}}}}'\n\
                 printf '%s' '{ok}'\nexit 3\n"
            ),
        ),
    ]
}

fn dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a temp dir");
        for (name, body) in scripts() {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    })
    .path()
}

/// The path of a fake by name.
pub fn fake(name: &str) -> PathBuf {
    let path = dir().join(name);
    assert!(path.is_file(), "no fake named {name}");
    path
}

/// A test's own folder, passed to the fakes as `$OUT`.
pub struct Out {
    dir: tempfile::TempDir,
}

impl Out {
    /// A fresh folder.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A file a fake wrote there, or "" if it wrote none.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// The pid the fake wrote down, once it has.
    pub async fn pid(&self) -> u32 {
        for _ in 0..500 {
            if let Ok(pid) = self.read("pid").trim().parse() {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the fake never wrote its pid");
    }
}

/// A runner of the fake `name` with `$OUT` set to `out` and a short grace period.
pub fn runner(name: &str, out: &Out, grace: Duration) -> ClaudeRunner {
    ClaudeRunner::new(
        Defaults::default()
            .program(fake(name))
            .env("OUT", out.path().display().to_string())
            .shutdown_grace(grace),
    )
}

/// True while a process with this pid exists (a zombie, not yet reaped, counts).
pub fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Events until `stop` says so (it sees each), or panics after 10 s.
pub async fn events_until(
    events: &mut broadcast::Receiver<SessionEvent>,
    mut stop: impl FnMut(&SessionEvent) -> bool,
) -> Vec<SessionEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching event in 10 s; saw {seen:#?}"))
            .expect("the events go on");
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}
