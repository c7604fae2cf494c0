//! Many `codehands` processes on one repo and one home at once: 32 runs started together,
//! then 32 approves together. All succeed, on distinct branches with one commit each, and
//! nothing is left over.

use crate::support;

use std::process::{Child, Command, Output, Stdio};

use support::World;

const SESSIONS: usize = 32;

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", "0")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn all_succeed(children: Vec<Child>, what: &str) -> Vec<Output> {
    children
        .into_iter()
        .enumerate()
        .map(|(i, child)| {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{what} {i} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            out
        })
        .collect()
}

#[test]
fn thirty_two_runs_then_thirty_two_approves_at_once_all_succeed() {
    // A fresh home: the first runs also race to make its folders.
    let world = World::demo();
    let base = world.git(&["rev-parse", "main"]).trim().to_owned();
    let ids: Vec<String> = (0..SESSIONS)
        .map(|_| support::new_id().to_string())
        .collect();

    let runs = ids
        .iter()
        .map(|id| {
            codehands(&world)
                .args([
                    "run",
                    ".",
                    "Fix the failing test.",
                    "--agent",
                    "fake",
                    "--json",
                    "--then",
                    "keep",
                    "--session-id",
                    id,
                ])
                .spawn()
                .unwrap()
        })
        .collect();
    for out in all_succeed(runs, "run") {
        let last = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(str::to_owned)
            .unwrap_or_default();
        assert!(last.contains("approval.requested"), "{last}");
    }

    let approves = ids
        .iter()
        .map(|id| {
            codehands(&world)
                .args(["approve", id, "-m", "Fix the month", "--json"])
                .spawn()
                .unwrap()
        })
        .collect();
    let mut branches = Vec::new();
    for out in all_succeed(approves, "approve") {
        let approved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let branch = approved["branch"].as_str().unwrap().to_owned();
        let commit = approved["commit"].as_str().unwrap();
        assert_eq!(world.git(&["rev-parse", &branch]).trim(), commit);
        assert_eq!(
            world
                .git(&["rev-list", "--count", &format!("{base}..{branch}")])
                .trim(),
            "1",
            "one commit on {branch}"
        );
        assert!(world.git(&["show", commit]).contains("getMonth() + 1"));
        branches.push(branch);
    }
    branches.sort();
    branches.dedup();
    assert_eq!(branches.len(), SESSIONS, "distinct branches");

    assert_eq!(
        world.git(&["rev-parse", "main"]).trim(),
        base,
        "main did not move"
    );
    assert!(
        world.worktree_dirs().is_empty(),
        "no worktree folder is left"
    );
    assert_eq!(
        world
            .git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1,
        "only the person's checkout is registered"
    );
    let sessions = codehands(&world)
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&sessions.stdout);
    assert_eq!(text.matches("\"approved\"").count(), SESSIONS, "{text}");
    let leftovers: Vec<_> = std::fs::read_dir(world.home.sessions_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
