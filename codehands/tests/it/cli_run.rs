//! The `codehands` command line as a person or a script uses it: separate
//! processes sharing one `$CODEHANDS_HOME`, with the fake agent.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{World, json_lines, run};

const ID: &str = "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42";

fn codehands(world: &World, mode: &str) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", mode)
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

fn validator() -> jsonschema::Validator {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/event.schema.json");
    jsonschema::validator_for(
        &serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap(),
    )
    .unwrap()
}

/// Starts `codehands run --json` and waits for its first event line.
fn start_streaming(
    world: &World,
    mode: &str,
) -> (
    Child,
    BufReader<std::process::ChildStdout>,
    serde_json::Value,
) {
    let mut child = codehands(world, mode)
        .args([
            "run",
            ".",
            "Fix the failing test.",
            "--agent",
            "fake",
            "--json",
            "--session-id",
            ID,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let first: serde_json::Value =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first:?}"));
    (child, out, first)
}

fn processes_in(dir: &std::path::Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            std::fs::read_link(e.path().join("cwd"))
                .ok()?
                .starts_with(dir)
                .then_some(pid)
        })
        .collect()
}

#[test]
fn run_json_prints_exactly_the_contract_then_the_approval() {
    let world = World::demo();
    let out = run(codehands(&world, "replay").args([
        "run",
        ".",
        "--agent",
        "fake",
        "--json",
        "--then",
        "approve",
        "-m",
        "Fix the month",
        "--session-id",
        ID,
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    let (events, approval) = lines.split_at(lines.len() - 1);
    let validator = validator();
    for (i, event) in events.iter().enumerate() {
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "line {}: {errors:?}", i + 1);
        assert_eq!(event["seq"], (i + 1) as u64);
    }
    assert_eq!(events.last().unwrap()["type"], "approval.requested");
    assert!(
        approval[0]["branch"]
            .as_str()
            .unwrap()
            .ends_with("-3f2a9c1e")
    );
    assert_eq!(
        world
            .git(&[
                "log",
                "-1",
                "--format=%s",
                approval[0]["branch"].as_str().unwrap()
            ])
            .trim(),
        "Fix the month"
    );
    let mut snapshot: Vec<serde_json::Value> = events.to_vec();
    for event in &mut snapshot {
        if event["type"] == "task.started" {
            event["payload"]["cwd"] = "[worktree]".into();
        }
    }
    insta::assert_json_snapshot!("run_json", snapshot, { "[].ts" => "[ts]", "[].raw" => "[raw]", "[].payload.output" => "[output]" });
}

#[test]
fn run_shows_a_readable_line_per_event_and_keeps_the_session() {
    let world = World::demo();
    let out =
        run(codehands(&world, "replay").args(["run", ".", "--agent", "fake", "--session-id", ID]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\x1b'), "no colour when not a terminal");
    insta::assert_snapshot!("run_human", text);
    let sessions = json_lines(&run(
        codehands(&world, "replay").args(["sessions", "--json"])
    ));
    assert_eq!(
        sessions[0][0]["state"], "awaiting_approval",
        "kept when nobody is asked"
    );
    let diff = json_lines(&run(
        codehands(&world, "replay").args(["diff", ID, "--json"])
    ));
    assert_eq!(diff[0]["stat"]["filesChanged"], 1);
    let rejected = run(codehands(&world, "replay").args(["reject", ID]));
    assert!(rejected.status.success());
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[test]
fn stop_from_another_process_then_resume_continues_seq() {
    let world = World::demo();
    let (mut child, mut out, first) = start_streaming(&world, "sleep");
    assert_eq!(first["type"], "task.started");
    let stopped = run(codehands(&world, "sleep").args(["stop", ID, "--json"]));
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    assert_eq!(json_lines(&stopped)[0]["state"], "stopped");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    let last: serde_json::Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["type"], "task.stopped",
        "the streaming process reports the stop"
    );
    let resumed =
        run(codehands(&world, "replay")
            .args(["resume", ID, "Carry on", "--json", "--then", "keep"]));
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let events = json_lines(&resumed);
    assert_eq!(events[0]["seq"], last["seq"].as_u64().unwrap() + 1);
    assert_eq!(events.last().unwrap()["type"], "approval.requested");
}

#[test]
fn a_killed_codehands_run_leaves_its_run_going_and_stop_still_ends_it() {
    let world = World::demo();
    let (mut child, _out, first) = start_streaming(&world, "fork");
    assert_eq!(first["type"], "task.started");
    let worktree = std::path::PathBuf::from(first["payload"]["cwd"].as_str().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    assert!(!processes_in(&worktree).is_empty(), "the agent runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !processes_in(&worktree).is_empty(),
        "the agent outlives the command that started it"
    );
    let out = run(codehands(&world, "replay").args(["recover", "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = &json_lines(&out)[0];
    assert_eq!(
        report["failed"],
        serde_json::json!([]),
        "nothing fails: {report}"
    );
    let sessions = json_lines(&run(
        codehands(&world, "replay").args(["sessions", "--json"])
    ));
    assert_eq!(sessions[0][0]["state"], "running");
    let stop = run(codehands(&world, "replay").args(["stop", ID]));
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_in(&worktree).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        processes_in(&worktree).is_empty(),
        "stop ends the whole tree, also the child that ignores SIGTERM"
    );
    let events = json_lines(&run(
        codehands(&world, "replay").args(["events", ID, "--json"])
    ));
    assert_eq!(events.last().unwrap()["type"], "task.stopped");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "seq 1..N"
    );
}

#[test]
fn a_hostile_prompt_is_kept_as_text() {
    let world = World::demo();
    let prompt = "--dangerously-skip-permissions\n\"quoted\" 'and' $(not a shell)";
    let out = run(codehands(&world, "replay").args([
        "run",
        ".",
        prompt,
        "--agent",
        "fake",
        "--json",
        "--session-id",
        ID,
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = json_lines(&run(
        codehands(&world, "replay").args(["sessions", "--json"])
    ));
    assert_eq!(sessions[0][0]["prompt"], prompt);
}

#[test]
fn unknown_sessions_and_bad_ids_are_clear_errors() {
    let world = World::demo();
    let out = run(codehands(&world, "replay").args([
        "approve",
        "0b7d4c55-3f2a-4c55-9a57-2f0d8e6b1a42",
        "-m",
        "x",
    ]));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no session"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(codehands(&world, "replay").args(["diff", "../etc/passwd"]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a UUID"));
}

#[test]
fn every_command_has_help() {
    let world = World::demo();
    for command in [
        "run",
        "demo",
        "diff",
        "approve",
        "reject",
        "stop",
        "resume",
        "send",
        "answer",
        "interrupt",
        "sessions",
        "task",
        "recover",
        "sandbox",
        "fake",
        "schema",
        "doctor",
        "agents",
        "gc",
        "completions",
    ] {
        let out = run(codehands(&world, "replay").args([command, "--help"]));
        assert!(out.status.success(), "{command}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{command}"
        );
    }
}

#[test]
fn the_demo_runs_end_to_end_and_approves() {
    let world = World::demo();
    let out = run(codehands(&world, "replay").args(["demo", "--delay-ms", "0"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("approved: "), "{text}");
    assert!(
        text.contains("on branch codehands/fix-the-failing-test"),
        "{text}"
    );
}

#[test]
fn sandbox_runs_the_repos_tests_in_the_box_and_reports_the_failure() {
    let image = sandbox_docker::LOCAL_DEBIAN_IMAGE;
    let present = Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        return runner_testkit::skip(&format!(
            "Docker or {image} is missing: run `cargo xtask images`"
        ));
    }
    let world = World::demo();
    let out = run(codehands(&world, "replay").args(["sandbox", ".", "--tz", "UTC", "--json"]));
    assert!(
        !out.status.success(),
        "the demo repo's test fails, so the exit code says so"
    );
    let result = &json_lines(&out)[0];
    assert_eq!(result["passed"], false, "{result}");
    assert!(result["error"].is_null(), "the box ran the tests: {result}");
    assert_eq!(result["command"], "npm test");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("months start at one"),
        "{result}"
    );
    assert!(
        world.home.root().join("runs").is_dir(),
        "the result file is kept under runs/"
    );
}
