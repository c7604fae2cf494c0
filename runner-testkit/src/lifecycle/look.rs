//! What the lifecycle suite looks at besides the runner's answers: the repo's branches and
//! files, the home's worktrees, the machine's processes, the events' kinds and verdicts.

use std::path::{Path, PathBuf};

use runner_contract::{Event, EventBody, Home};

/// The type names of `events`, in order.
pub(super) fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.body.type_name()).collect()
}

/// `git -C repo args…`'s stdout; panics with its stderr when it fails.
pub(super) fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every worktree folder left under the home.
pub(super) fn worktrees_left(home: &Home) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for key in std::fs::read_dir(home.worktrees_dir())
        .into_iter()
        .flatten()
    {
        let Ok(key) = key else { continue };
        found.extend(
            std::fs::read_dir(key.path())
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path()),
        );
    }
    found
}

/// Whether a process whose command line holds `needle` runs on this machine (its arguments
/// joined by spaces: a shell that execs `sleep 30` leaves the arguments `sleep` and `30`).
pub(super) fn process_running(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|cmdline| {
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(needle)
        })
}

/// The verdicts of the run's `test.result` events, in order.
pub(super) fn test_verdicts(events: &[Event]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::TestResult(t) => Some(t.passed),
            _ => None,
        })
        .collect()
}

/// Waits `how_long` without holding the async runtime's thread (this crate names no runtime).
pub(super) async fn pause(how_long: std::time::Duration) {
    let (done, wait) = futures::channel::oneshot::channel::<()>();
    std::thread::spawn(move || {
        std::thread::sleep(how_long);
        let _ = done.send(());
    });
    let _ = wait.await;
}
