//! Tasks through the `codehands` binary with the fake agent: `run --attempts` prints a task
//! id, `task ID` compares the attempts, `diff --against` compares two, `approve` of an attempt
//! says it rejects the others and does, `reject TASK` rejects all, refusals make nothing, and
//! a pick killed with SIGKILL at any instant is settled by `recover` with nothing lost.

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{World, json_lines, ok, run, text};

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", "0")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

/// Starts a task of `attempts`, waits until its attempts have ended; its report.
fn task(world: &World, attempts: &str) -> Value {
    let out = run(codehands(world).args([
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "fake",
        "--attempts",
        attempts,
    ]));
    let id = ok(&out).lines().next().unwrap().trim().to_owned();
    runner_contract::TaskId::parse(&id).unwrap();
    let out = run(codehands(world).args(["task", &id[..8], "--follow", "--json"]));
    let lines = json_lines(&out);
    let report = lines.last().unwrap().clone();
    assert_eq!(report["taskId"], id.as_str(), "{}", ok(&out));
    report
}

fn sessions(report: &Value) -> Vec<String> {
    report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

fn session_state(world: &World, id: &str) -> String {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    let record: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    record["state"].as_str().unwrap().to_owned()
}

#[test]
fn attempts_run_side_by_side_and_approve_rejects_the_others() {
    let world = World::demo();
    let report = task(&world, "3");
    let ids = sessions(&report);
    assert_eq!(ids.len(), 3);
    for attempt in report["attempts"].as_array().unwrap() {
        assert_eq!(attempt["state"], "awaiting_approval", "{attempt}");
        assert_eq!(attempt["agent"], "fake");
    }
    // The human table names every attempt.
    let table = ok(&run(
        codehands(&world).args(["task", &report["taskId"].as_str().unwrap()[..8]])
    ));
    for id in &ids {
        assert!(table.contains(&id[..8]), "{table}");
    }
    // `sessions` and `report` say what the task cost together.
    let task_id = report["taskId"].as_str().unwrap();
    let listed = ok(&run(codehands(&world).args(["sessions"])));
    assert!(
        listed.contains(&format!("task {} (open): 3 attempts, $", &task_id[..8])),
        "{listed}"
    );
    let totals = &json_lines(&run(codehands(&world).args(["report", task_id, "--json"])))[0];
    let sum: f64 = totals["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["costUsd"].as_f64().unwrap())
        .sum();
    assert!(
        (totals["costUsd"].as_f64().unwrap() - sum).abs() < 1e-9,
        "{totals}"
    );
    // The same replay twice: no difference.
    let out = run(codehands(&world).args(["diff", &ids[0], "--against", &ids[1], "--json"]));
    let compared = &json_lines(&out)[0];
    assert_eq!(compared["patch"], "", "{compared}");
    assert_eq!(compared["files"][0]["compared"], "same", "{compared}");

    let out = run(codehands(&world).args(["approve", &ids[0][..8], "-m", "Fix the month"]));
    let stdout = ok(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("rejects the other attempts") && stderr.contains(&ids[1][..8]),
        "said before it did: {stderr}"
    );
    assert!(stdout.contains("approved:"), "{stdout}");
    assert_eq!(session_state(&world, &ids[0]), "approved");
    assert_eq!(session_state(&world, &ids[1]), "rejected");
    assert_eq!(session_state(&world, &ids[2]), "rejected");
    assert_eq!(world.branches().len(), 2, "main and the picked branch");
    assert!(world.worktree_dirs().is_empty());
}

#[test]
fn keep_others_keeps_them_and_reject_task_rejects_the_rest() {
    let world = World::demo();
    let report = task(&world, "fake,fake");
    let ids = sessions(&report);
    let out = run(codehands(&world).args(["approve", &ids[1], "--keep-others", "--json"]));
    let picked = &json_lines(&out)[0];
    assert_eq!(picked["kept"][0], ids[0].as_str(), "{picked}");
    assert_eq!(session_state(&world, &ids[0]), "awaiting_approval");
    let task_id = report["taskId"].as_str().unwrap();
    ok(&run(codehands(&world).args(["reject", task_id])));
    assert_eq!(session_state(&world, &ids[0]), "rejected");
    assert_eq!(session_state(&world, &ids[1]), "approved");
}

#[test]
fn reject_of_a_task_rejects_every_attempt() {
    let world = World::demo();
    let report = task(&world, "2");
    let task_id = report["taskId"].as_str().unwrap();
    let out = ok(&run(codehands(&world).args(["reject", &task_id[..8]])));
    assert!(out.contains("2 attempt(s)"), "{out}");
    for id in sessions(&report) {
        assert_eq!(session_state(&world, &id), "rejected");
    }
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[test]
fn a_list_naming_an_unknown_agent_or_a_foreign_model_starts_nothing() {
    let world = World::demo();
    for (list, named) in [
        ("fake,nobody", "nobody"),
        ("fake,fake:gpt-5", "gpt-5"),
        ("0", "0"),
    ] {
        let out = run(codehands(&world).args(["run", ".", "Fix it", "--attempts", list]));
        assert!(!out.status.success(), "{list} started");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(named), "{list}: {stderr}");
        assert!(
            !world.home.sessions_dir().exists()
                || std::fs::read_dir(world.home.sessions_dir())
                    .unwrap()
                    .count()
                    == 0
        );
        assert_eq!(world.branches(), vec!["main".to_owned()]);
        assert!(world.worktree_dirs().is_empty());
    }
}

/// A pick killed with SIGKILL at a different instant each round: `recover` then settles it,
/// and either the pick happened whole (one commit on the picked branch, the others rejected)
/// or not at all (every attempt waiting, as before). Nothing is half done, nothing lost.
#[test]
fn a_pick_killed_at_any_instant_is_settled_by_recover() {
    let world = World::demo();
    let mut whole = 0;
    let mut none = 0;
    for (round, delay_ms) in [0u64, 10, 25, 50, 80, 120, 180, 260]
        .into_iter()
        .enumerate()
    {
        let report = task(&world, "3");
        let ids = sessions(&report);
        let task_id = report["taskId"].as_str().unwrap().to_owned();
        let mut approve = codehands(&world)
            .args(["approve", &ids[0], "-m", "Fix the month"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SIGKILL, of the process this test started and no other.
        let _ = approve.kill();
        let _ = approve.wait();
        ok(&run(codehands(&world).args(["recover"])));
        let after =
            json_lines(&run(codehands(&world).args(["task", &task_id, "--json"])))[0].clone();
        let states: Vec<String> = ids.iter().map(|id| session_state(&world, id)).collect();
        match after["state"].as_str().unwrap() {
            "picked" => {
                whole += 1;
                assert_eq!(
                    states,
                    ["approved", "rejected", "rejected"],
                    "round {round}"
                );
                let branch = after["attempts"][0]["branch"].as_str().unwrap();
                let log = world.git(&["log", "--format=%s", &format!("main..{branch}")]);
                assert_eq!(log.trim(), "Fix the month", "round {round}: one commit");
            }
            "open" => {
                none += 1;
                assert_eq!(
                    states,
                    [
                        "awaiting_approval",
                        "awaiting_approval",
                        "awaiting_approval"
                    ],
                    "round {round}"
                );
                // Nothing lost: the attempt can still be picked.
                ok(&run(codehands(&world).args([
                    "approve",
                    &ids[0],
                    "-m",
                    "Fix the month",
                ])));
            }
            other => panic!("round {round}: the task is {other} after recover: {after}"),
        }
    }
    eprintln!("picks killed: {whole} had happened whole, {none} not at all");
}
