//! Runs outlive the `codehands` process that started them, on the command line: SIGKILL of
//! `codehands run` and of the run's supervisor at random instants (fixed seeds), a reader
//! that goes away (`| head -1`), and `run --detach`.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{World, json_lines, run};

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", "40")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

fn start(world: &World, id: &str) -> std::process::Child {
    codehands(world)
        .args([
            "run",
            ".",
            "Fix the failing test.",
            "--agent",
            "fake",
            "--json",
        ])
        .args(["--then", "keep", "--session-id", id])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Follows the session to its end (healing it: a new supervisor, or the end from the log).
fn follow(world: &World, id: &str) -> Vec<serde_json::Value> {
    let out = run(codehands(world).args(["events", id, "--follow", "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out)
}

fn state(world: &World, id: &str) -> Option<String> {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    record["state"].as_str().map(str::to_owned)
}

/// Type and payload, with the session's ids replaced (they name the worktree and branch).
fn shape(events: &[serde_json::Value], id: &str) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!("{} {}", e["type"], e["payload"])
                .replace(id, "<id>")
                .replace(&id[..8], "<id8>")
        })
        .collect()
}

fn assert_contiguous(events: &[serde_json::Value]) {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

fn kill(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// xorshift64*: fixed seeds give the same instants on every machine.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn session_id(n: u64) -> String {
    format!("5e55{n:04x}-0b7d-4c55-9a57-2f0d8e6b1a42")
}

#[test]
fn sigkill_of_run_and_supervisor_at_random_instants_never_loses_the_work_or_an_event() {
    let world = World::demo();
    let reference_id = session_id(0);
    let mut child = start(&world, &reference_id);
    assert!(child.wait().unwrap().success());
    let reference = follow(&world, &reference_id);
    assert_eq!(
        state(&world, &reference_id).as_deref(),
        Some("awaiting_approval")
    );
    assert_contiguous(&reference);
    let expected = shape(&reference, &reference_id);
    let seeds = 50;
    let mut rng = Rng(0x00c0_ffee_d00d_f00d);
    for n in 1..=seeds {
        let id = session_id(n);
        let mut child = start(&world, &id);
        // Once the turn is planned the run must complete, whatever is killed after.
        let turn = world
            .home
            .run_dir(&runner_contract::SessionId::parse(&id).unwrap())
            .join("turn.json");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !turn.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(turn.exists(), "seed {n}: the turn was planned");
        let run_after = rng.below(1200);
        let supervisor_after = (rng.below(2) == 0).then(|| rng.below(1500));
        let started = Instant::now();
        let mut run_killed = false;
        let mut supervisor_killed = supervisor_after.is_none();
        while !(run_killed && supervisor_killed) && started.elapsed() < Duration::from_secs(5) {
            let ms = started.elapsed().as_millis() as u64;
            if !run_killed && ms >= run_after {
                kill(child.id() as i32);
                run_killed = true;
            }
            if !supervisor_killed && supervisor_after.is_some_and(|at| ms >= at) {
                if let Some(pid) = support::supervisor_of(&id) {
                    kill(pid);
                }
                supervisor_killed = true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.wait();
        let events = follow(&world, &id);
        let what = format!(
            "seed {n}: run killed at {run_after} ms, supervisor at {supervisor_after:?} ms"
        );
        assert_eq!(
            state(&world, &id).as_deref(),
            Some("awaiting_approval"),
            "{what}"
        );
        assert_contiguous(&events);
        assert_eq!(shape(&events, &id), expected, "{what}");
        let diff = run(codehands(&world).args(["diff", &id]));
        assert!(
            String::from_utf8_lossy(&diff.stdout).contains("getMonth() + 1"),
            "{what}: the agent's work is there"
        );
    }
}

#[test]
fn a_reader_that_goes_away_after_one_line_leaves_the_run_to_finish() {
    let world = World::demo();
    let id = session_id(0xabc);
    // `codehands run --json | head -1`: read one line, then close the pipe.
    let mut child = codehands(&world)
        .args([
            "run",
            ".",
            "Fix the failing test.",
            "--agent",
            "fake",
            "--json",
        ])
        .args(["--session-id", &id])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["seq"], 1);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "a closed stdout is not an error of the run"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while state(&world, &id).as_deref() == Some("running") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(state(&world, &id).as_deref(), Some("awaiting_approval"));
    let diff = run(codehands(&world).args(["diff", &id]));
    assert!(String::from_utf8_lossy(&diff.stdout).contains("getMonth() + 1"));
}

#[test]
fn run_detach_prints_the_id_once_the_agent_runs_and_the_run_goes_on() {
    let world = World::demo();
    let out = run(codehands(&world).args([
        "run", ".", "Fix it.", "--agent", "fake", "--detach", "--json",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = json_lines(&out);
    let id = printed[0]["sessionId"].as_str().unwrap().to_owned();
    let agent = world
        .home
        .run_dir(&runner_contract::SessionId::parse(&id).unwrap())
        .join("agent.json");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&agent).unwrap()).unwrap();
    assert!(
        recorded["process"]["pid"].is_u64(),
        "the agent runs: {recorded}"
    );
    let events = follow(&world, &id);
    assert_contiguous(&events);
    assert_eq!(events.last().unwrap()["type"], "approval.requested");
    let plain = run(codehands(&world).args(["run", ".", "Fix it.", "--agent", "fake", "--detach"]));
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(
        runner_contract::SessionId::parse(text.trim()).is_ok(),
        "without --json: the id alone: {text}"
    );
    follow(&world, text.trim());
}
