//! Workflows through the library and the command line, with small agents of our own (shell
//! scripts as agent profiles in the home): refusals that make nothing, a read-only phase
//! whose agent writes anyway, a reviewer's malformed answer, a finding that goes back to the
//! implementer once before a clean review, and the `--json` events against the schemas.

use crate::support;

use std::path::Path;

use runner_contract::event::FailureKind;
use runner_contract::workflow::Severity;
use runner_contract::{EventBody, Isolation, Runner, SessionId, SessionState, WorkflowOptions};
use runner_core::LocalRunner;
use runner_testkit::runner as suite;
use support::World;

/// A coder: notes each prompt it is given (outside the worktree), adds a line to `a.txt`.
const CODER: &str = r#"
name = "coder"
program = "/bin/sh"
args = ["-c", "cat >> \"$0/coder-prompts.txt\"; echo '=== end of prompt' >> \"$0/coder-prompts.txt\"; echo fixed >> a.txt; echo implemented", "LOGDIR"]
parser = "text"
"#;

/// A planner that only reads.
const PLANNER: &str = r#"
name = "planner"
program = "/bin/sh"
args = ["-c", "cat > /dev/null; ls > /dev/null; echo 'plan: add a line to a.txt'"]
parser = "text"
"#;

/// A planner that takes a second (its driver is killed while it runs).
const SLEEPY_PLANNER: &str = r#"
name = "sleepy-planner"
program = "/bin/sh"
args = ["-c", "cat > /dev/null; sleep 1; echo 'plan: add a line to a.txt'"]
parser = "text"
"#;

/// A planner that writes although its phase is read-only.
const BAD_PLANNER: &str = r#"
name = "bad-planner"
program = "/bin/sh"
args = ["-c", "cat > /dev/null; echo planted > planted.txt; echo 'plan: done'"]
parser = "text"
"#;

/// A planner that takes its time (Ctrl-C comes while it runs).
const SLOW_PLANNER: &str = r#"
name = "slow-planner"
program = "/bin/sh"
args = ["-c", "cat > /dev/null; echo planning; sleep 30; echo 'plan: late'"]
parser = "text"
"#;

/// A reviewer: one major finding on its first review, none (in a ```json fence) after.
const REVIEWER: &str = r#"
name = "reviewer"
program = "/bin/sh"
args = ["-c", "cat > /dev/null; n=$(cat \"$0/reviews\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0/reviews\"; if [ $n -eq 1 ]; then echo '{\"findings\": [{\"file\": \"a.txt\", \"line\": 2, \"severity\": \"major\", \"text\": \"the second line says fixed twice\"}]}'; else echo 'Looks right now.'; echo '```json'; echo '{\"findings\": []}'; echo '```'; fi", "LOGDIR"]
parser = "text"
"#;

/// A reviewer that answers prose instead of the JSON asked for.
const LAZY_REVIEWER: &str = r#"
name = "lazy-reviewer"
program = "/bin/sh"
args = ["-c", "cat > /dev/null; echo 'Looks good to me!'"]
parser = "text"
"#;

/// A workflow of `planner`, `coder` and `reviewer` (names replaceable).
fn workflow(planner: &str, reviewer: &str) -> String {
    format!(
        r#"
name = "test-flow"
rounds = 2

[[phase]]
name = "plan"
kind = "plan"
agent = "{planner}"
permissions = "read-only"
prompt = ["Plan:", "{{task}}"]

[[phase]]
name = "implement"
kind = "implement"
agent = "coder"
permissions = "edit"
prompt = ["Do:", "{{task}}", "Plan:", "{{previous}}", "Findings:", "{{findings}}"]

[[phase]]
name = "review"
kind = "review"
agent = "{reviewer}"
permissions = "read-only"
gate = {{ max-severity = "minor" }}
prompt = ["Review as JSON:", "{{task}}", "{{diff}}"]
"#
    )
}

/// A world whose home holds the test agents' profiles; their logs go to `logs/`.
fn world() -> World {
    let world = World::new(&[("a.txt", "one\n")]);
    let logs = world.dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let agents = world.home.agents_dir();
    std::fs::create_dir_all(&agents).unwrap();
    for (name, text) in [
        ("coder", CODER),
        ("planner", PLANNER),
        ("bad-planner", BAD_PLANNER),
        ("slow-planner", SLOW_PLANNER),
        ("sleepy-planner", SLEEPY_PLANNER),
        ("reviewer", REVIEWER),
        ("lazy-reviewer", LAZY_REVIEWER),
    ] {
        let text = text.replace("LOGDIR", logs.to_str().unwrap());
        std::fs::write(agents.join(format!("{name}.toml")), text).unwrap();
    }
    world
}

fn runner(world: &World) -> LocalRunner {
    world.runner_with(world.settings(), |_| {})
}

fn options(world: &World, text: &str) -> WorkflowOptions {
    WorkflowOptions {
        session_id: SessionId::new_random(),
        repo_path: world.repo.clone(),
        prompt: "Add a line to a.txt.".into(),
        workflow: codehands::workflow::parse(text, "test-flow.toml").unwrap(),
        budget_usd: Some(1.0),
        isolation: Isolation::None,
        timeout_ms: None,
    }
}

/// Nothing of a session was made: no record, no worktree, no branch but main.
fn nothing_made(world: &World) {
    let sessions = std::fs::read_dir(world.home.sessions_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(sessions, 0, "no session record");
    assert!(world.worktree_dirs().is_empty(), "no worktree");
    assert_eq!(world.branches(), vec!["main".to_owned()], "no branch");
    let runs = world
        .home
        .run_dir(&SessionId::new_random())
        .parent()
        .unwrap()
        .to_owned();
    let runs = std::fs::read_dir(runs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(runs, 0, "no run folder (no workflow state, no driver lock)");
}

#[tokio::test]
async fn a_start_refused_after_the_checks_leaves_no_workflow_state() {
    let world = world();
    let runner = runner(&world);
    let mut options = options(&world, &workflow("planner", "reviewer"));
    let plain = world.dir.path().join("not-a-repo");
    std::fs::create_dir_all(&plain).unwrap();
    options.repo_path = plain;
    assert!(runner.run_workflow(options).await.is_err());
    nothing_made(&world);
}

fn failure_of(events: &[runner_contract::Event]) -> &runner_contract::event::TaskFailed {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::TaskFailed(f) => Some(f),
            _ => None,
        })
        .expect("a task.failed")
}

fn cli_run(world: &World, args: &[&str]) -> std::process::Output {
    support::run(
        world
            .codehands()
            .current_dir(&world.repo)
            .env("NO_COLOR", "1")
            .args(args),
    )
}

#[test]
fn refusals_name_the_problem_and_start_nothing() {
    let world = world();
    let dir = world.dir.path();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let good = workflow("planner", "reviewer");
    let cases = [
        (
            file("unknown-key.toml", &format!("colour = \"red\"\n{good}")),
            "colour",
        ),
        (
            file(
                "unknown-agent.toml",
                &good.replace("agent = \"planner\"", "agent = \"nobody\""),
            ),
            "nobody",
        ),
        (
            file(
                "writing-review.toml",
                &good.replace(
                    "agent = \"reviewer\"\npermissions = \"read-only\"",
                    "agent = \"reviewer\"\npermissions = \"edit\"",
                ),
            ),
            "write tools",
        ),
    ];
    for (path, says) in cases {
        let out = cli_run(
            &world,
            &[
                "run",
                ".",
                "Add a line.",
                "--workflow",
                &path,
                "--isolation",
                "none",
            ],
        );
        let stderr = support::text(&out.stderr);
        assert!(!out.status.success(), "{path}: {stderr}");
        assert!(stderr.contains(says), "{path}: {stderr}");
        nothing_made(&world);
    }
    // A workflow together with one agent, attempts or an engine is refused by the parser.
    for clash in [
        vec!["--agent", "coder"],
        vec!["--attempts", "2"],
        vec!["--engine", "docker"],
    ] {
        let mut args = vec!["run", ".", "x", "--workflow", "plan-code-review"];
        args.extend(clash.iter().copied());
        let out = cli_run(&world, &args);
        let stderr = support::text(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains("cannot be used with"), "{stderr}");
    }
    nothing_made(&world);
}

#[tokio::test]
async fn an_unknown_agent_in_a_phase_is_refused_by_the_library_too() {
    let world = world();
    let runner = runner(&world);
    let text = workflow("planner", "reviewer").replace("agent = \"coder\"", "agent = \"nobody\"");
    let error = match runner.run_workflow(options(&world, &text)).await {
        Ok(_) => panic!("a phase of an unknown agent starts nothing"),
        Err(e) => e,
    };
    assert!(error.to_string().contains("nobody"), "{error}");
    nothing_made(&world);
}

#[tokio::test]
async fn a_read_only_phase_whose_agent_writes_fails_with_reason_phase() {
    let world = world();
    let runner = runner(&world);
    let options = options(&world, &workflow("bad-planner", "reviewer"));
    let id = options.session_id;
    let events = suite::collect(runner.run_workflow(options).await.unwrap()).await;
    let failed = failure_of(&events);
    assert_eq!(failed.reason, FailureKind::Phase, "{failed:?}");
    assert!(failed.message.contains("planted.txt"), "{}", failed.message);
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::Failed);
    // The change is kept for inspection, never discarded: its diff shows the stray write.
    assert!(record.kept, "{record:?}");
    assert!(
        record.worktree_path.exists(),
        "the worktree stays for inspection"
    );
    let diff = runner.diff(&id).await.unwrap();
    assert!(diff.patch.contains("planted.txt"), "{}", diff.patch);
    assert!(
        failed.message.contains("kept for inspection"),
        "{}",
        failed.message
    );
    assert!(
        runner.approve(&id, "no").await.is_err(),
        "a failed change is not approved"
    );
    // The implementer never ran.
    assert!(!world.dir.path().join("logs/coder-prompts.txt").exists());
    support::assert_contiguous(&events);
    // Rejecting it removes what was kept.
    runner.reject(&id).await.unwrap();
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Rejected
    );
    assert!(!record.worktree_path.exists());
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

#[tokio::test]
async fn a_malformed_review_fails_with_reason_phase_never_a_pass() {
    let world = world();
    let runner = runner(&world);
    let options = options(&world, &workflow("planner", "lazy-reviewer"));
    let id = options.session_id;
    let events = suite::collect(runner.run_workflow(options).await.unwrap()).await;
    let failed = failure_of(&events);
    assert_eq!(failed.reason, FailureKind::Phase, "{failed:?}");
    assert!(failed.message.contains("review"), "{}", failed.message);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.body, EventBody::ApprovalRequested(_))),
        "no approval after a malformed review"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Failed
    );
}

#[tokio::test]
async fn a_finding_goes_back_once_then_a_clean_review_awaits_approval() {
    let world = world();
    let runner = runner(&world);
    let options = options(&world, &workflow("planner", "reviewer"));
    let id = options.session_id;
    let events = suite::collect(runner.run_workflow(options).await.unwrap()).await;
    support::assert_contiguous(&events);
    let started: Vec<(String, u32)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::PhaseStarted(p) => Some((p.name.clone(), p.round)),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, u32)> = [
        ("plan", 1),
        ("implement", 1),
        ("review", 1),
        ("implement", 2),
        ("review", 2),
    ]
    .iter()
    .map(|(n, r)| ((*n).to_owned(), *r))
    .collect();
    assert_eq!(started, expected);
    let finished = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::PhaseFinished(_)))
        .count();
    assert_eq!(finished, 5, "a phase.finished per phase.started");
    let findings: Vec<&runner_contract::workflow::Finding> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ReviewFinding(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].severity, Severity::Major);
    assert_eq!(findings[0].line, Some(2));
    assert!(matches!(
        events.last().map(|e| &e.body),
        Some(EventBody::ApprovalRequested(_))
    ));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e.body, EventBody::ApprovalRequested(_)))
            .count(),
        1,
        "approval is asked once, after the last phase"
    );
    // The second implement turn was given the finding and the plan.
    let prompts = std::fs::read_to_string(world.dir.path().join("logs/coder-prompts.txt")).unwrap();
    let turns: Vec<&str> = prompts.split("=== end of prompt").collect();
    assert!(turns[0].contains("plan: add a line"), "{prompts}");
    assert!(turns[0].contains("(none)"), "no findings yet: {prompts}");
    assert!(
        turns[1].contains("- a.txt:2 [major] the second line says fixed twice"),
        "{prompts}"
    );
    // Each turn's plan recorded its phase; the session awaits approval, whose commit holds
    // both implement turns' lines.
    let record = runner.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::AwaitingApproval);
    assert_eq!(record.budget_usd, Some(0.2), "1.0 over 5 turns at most");
    let approved = runner.approve(&id, "Add the line").await.unwrap();
    let content = support::git(
        &world.repo,
        &["show", &format!("{}:a.txt", approved.commit)],
    );
    assert_eq!(content, "one\nfixed\nfixed\n");
    assert!(approved.branch.starts_with("codehands/"));
}

#[test]
fn the_command_line_prints_phases_and_its_json_is_the_schema() {
    let world = world();
    let path = world.dir.path().join("flow.toml");
    std::fs::write(&path, workflow("planner", "reviewer")).unwrap();
    let out = cli_run(
        &world,
        &[
            "run",
            ".",
            "Add a line to a.txt.",
            "--workflow",
            path.to_str().unwrap(),
            "--isolation",
            "none",
            "--json",
        ],
    );
    support::ok(&out);
    let lines = support::json_lines(&out);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/event.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for line in &lines {
        assert!(validator.is_valid(line), "{line}");
    }
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    for kind in ["phase.started", "phase.finished", "review.finding"] {
        assert!(types.contains(&kind), "{kind} in {types:?}");
    }
    assert_eq!(types.last(), Some(&"approval.requested"));
    // A session of one branch, kept for a decision (stdin is no terminal).
    assert_eq!(world.worktree_dirs().len(), 1);

    // The human view names each phase as it goes.
    let human = cli_run(
        &world,
        &[
            "run",
            ".",
            "Add a line to a.txt.",
            "--workflow",
            path.to_str().unwrap(),
            "--isolation",
            "none",
            "--then",
            "reject",
        ],
    );
    let text = support::ok(&human);
    assert!(text.contains("phase.started"), "{text}");
    assert!(
        text.contains("review (review, reviewer, read-only)"),
        "{text}"
    );
}

#[test]
fn ctrl_c_stops_the_phase_under_way_and_no_later_phase_starts() {
    use std::io::BufRead;
    let world = world();
    let path = world.dir.path().join("slow.toml");
    std::fs::write(&path, workflow("slow-planner", "reviewer")).unwrap();
    let mut child = world
        .codehands()
        .current_dir(&world.repo)
        .args(["run", ".", "Add a line to a.txt.", "--workflow"])
        .arg(&path)
        .args(["--isolation", "none", "--json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let planning = line.contains("\"planning\"");
        seen.push(line);
        if planning {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    seen.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    let types: Vec<String> = seen
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(
        types.iter().filter(|t| t.contains("phase.started")).count(),
        1,
        "{seen:#?}"
    );
    assert_eq!(
        types.last().map(String::as_str),
        Some("\"task.stopped\""),
        "{seen:#?}"
    );
    assert!(status.success(), "{status:?}");
    let sessions = support::run(world.codehands().args(["sessions", "--json"]));
    let text = support::ok(&sessions);
    assert!(text.contains("\"stopped\""), "{text}");
}

/// A sandbox whose tests always fail.
struct FailingSandbox;

#[async_trait::async_trait]
impl runner_contract::Sandbox for FailingSandbox {
    async fn available(&self) -> bool {
        true
    }

    async fn run_tests(
        &self,
        _request: &runner_contract::SandboxRequest,
    ) -> runner_contract::SandboxResult {
        runner_contract::SandboxResult {
            n: 1,
            command: "npm test".into(),
            image: "codehands/sandbox-node:22".into(),
            passed: false,
            exit_code: Some(1),
            timed_out: false,
            out_of_memory: false,
            output: "1 failing".into(),
            duration_ms: 5,
            error: None,
        }
    }
}

#[tokio::test]
async fn a_verify_gate_whose_tests_fail_fails_the_phase() {
    let world = world();
    let runner = runner(&world).with_sandbox(std::sync::Arc::new(FailingSandbox));
    let text = workflow("planner", "reviewer").replace(
        "agent = \"coder\"\npermissions = \"edit\"",
        "agent = \"coder\"\npermissions = \"edit\"\ngate = { verify = true }",
    );
    let options = options(&world, &text);
    let id = options.session_id;
    let events = suite::collect(runner.run_workflow(options).await.unwrap()).await;
    let failed = failure_of(&events);
    assert_eq!(failed.reason, FailureKind::Phase, "{failed:?}");
    assert!(
        failed.message.contains("tests did not pass"),
        "{}",
        failed.message
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.body, EventBody::TestResult(t) if t.sandboxed)),
        "the sandbox ran after the implement phase"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Failed
    );
    // The reviewer never ran.
    assert!(!world.dir.path().join("logs/reviews").exists());
}

/// The session's record on disk, as JSON.
fn record_of(world: &World, id: &str) -> serde_json::Value {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_workflow_whose_driver_is_killed_goes_on_with_recover_and_only_then_is_approved() {
    driver_killed_after(
        "sleepy-planner",
        "\"phase.started\"",
        "phase \"plan\" (round 1) is under way or next",
        false,
    );
}

#[test]
fn a_phase_finished_that_the_dead_driver_logged_is_not_logged_again() {
    // The driver died right after it logged the plan's phase.finished, before it saved the
    // next phase: the next driver checks the plan again but does not log it twice.
    driver_killed_after(
        "sleepy-planner",
        "\"phase.started\"",
        "phase \"plan\" (round 1) is under way or next",
        true,
    );
}

#[test]
fn a_workflow_whose_driver_is_killed_after_a_phase_ended_goes_on_with_recover() {
    // Killed once the plan's phase.finished is out: the implement turn may or may not have
    // been planned, its phase.finished never repeats.
    driver_killed_after(
        "planner",
        "\"phase.finished\"",
        "is under way or next",
        false,
    );
}

/// Starts `codehands run --workflow` (planning with `planner`), kills it with SIGKILL once
/// it has printed a line holding `marker`, and waits for the turn under way to end without
/// it; the session's id.
fn kill_driver_after(world: &World, planner: &str, marker: &str) -> String {
    use std::io::BufRead;
    let path = world.dir.path().join("flow.toml");
    std::fs::write(&path, workflow(planner, "reviewer")).unwrap();
    let id = SessionId::new_random().to_string();
    let mut child = world
        .codehands()
        .current_dir(&world.repo)
        .args(["run", ".", "Add a line to a.txt.", "--workflow"])
        .arg(&path)
        .args(["--isolation", "none", "--json", "--session-id", &id])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains(marker) {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    drop(lines);
    // The turn goes on without it, and ends awaiting approval.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while record_of(world, &id)["state"] != "awaiting_approval" {
        assert!(std::time::Instant::now() < deadline, "the turn never ended");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    id
}

#[test]
fn a_workflow_whose_driver_died_can_still_be_rejected_and_is_not_resumed_then() {
    let world = world();
    let id = kill_driver_after(&world, "sleepy-planner", "\"phase.started\"");
    support::ok(&support::run(
        world
            .codehands()
            .current_dir(&world.repo)
            .args(["reject", &id]),
    ));
    assert_eq!(record_of(&world, &id)["state"], "rejected");
    let out = support::run(world.codehands().args(["recover", "--json"]));
    let report: serde_json::Value = serde_json::from_str(&support::ok(&out)).unwrap();
    assert_eq!(
        report["resumedWorkflows"],
        serde_json::json!([]),
        "{report}"
    );
    assert_eq!(world.branches(), vec!["main".to_owned()]);
}

/// `codehands run --workflow` (planning with `planner`) killed with SIGKILL once it has
/// printed a line holding `marker`; approve is refused (saying `refusal`) until `recover`
/// has driven the rest. `plan_logged`: the log then gets the plan's `phase.finished`, as a
/// driver that died right after writing it leaves it.
fn driver_killed_after(planner: &str, marker: &str, refusal: &str, plan_logged: bool) {
    let world = world();
    let id = kill_driver_after(&world, planner, marker);
    let approve = || {
        support::run(world.codehands().current_dir(&world.repo).args([
            "approve",
            &id,
            "-m",
            "The workflow's change",
        ]))
    };
    let refused = approve();
    assert!(
        !refused.status.success(),
        "an unreviewed change was approved"
    );
    let said = support::text(&refused.stderr);
    assert!(
        said.contains("has not finished")
            && said.contains(refusal)
            && said.contains("codehands recover"),
        "{said}"
    );
    assert_eq!(record_of(&world, &id)["state"], "awaiting_approval");
    let log_path = world
        .home
        .run_dir(&id.parse().unwrap())
        .join("events.jsonl");
    if plan_logged {
        let log = std::fs::read_to_string(&log_path).unwrap();
        let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "task.finished", "{log}");
        let finished = serde_json::json!({
            "sessionId": id,
            "seq": last["seq"].as_u64().unwrap() + 1,
            "ts": last["ts"],
            "type": "phase.finished",
            "payload": {"name": "plan", "agent": planner, "round": 1},
        });
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log_path)
            .unwrap();
        std::io::Write::write_all(&mut file, format!("{finished}\n").as_bytes()).unwrap();
    }

    // recover drives the rest: implement, review (a finding), implement, review.
    let out = support::run(world.codehands().args(["recover", "--json"]));
    let report: serde_json::Value = serde_json::from_str(&support::ok(&out)).unwrap();
    assert_eq!(
        report["resumedWorkflows"],
        serde_json::json!([id]),
        "{report}"
    );
    assert_eq!(report["cleanupErrors"], serde_json::json!([]), "{report}");
    assert_eq!(record_of(&world, &id)["state"], "awaiting_approval");

    let log = std::fs::read_to_string(&log_path).unwrap();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let phases = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| format!("{} {}", e["payload"]["name"], e["payload"]["round"]))
            .collect()
    };
    let expected = [
        "\"plan\" 1",
        "\"implement\" 1",
        "\"review\" 1",
        "\"implement\" 2",
        "\"review\" 2",
    ];
    assert_eq!(phases("phase.started"), expected, "{log}");
    assert_eq!(phases("phase.finished"), expected, "{log}");
    let asked = events
        .iter()
        .filter(|e| e["type"] == "approval.requested")
        .count();
    assert_eq!(asked, 1, "{log}");
    assert_eq!(events.last().unwrap()["type"], "approval.requested");

    // A second recover finds nothing more to drive.
    let out = support::run(world.codehands().args(["recover", "--json"]));
    let report: serde_json::Value = serde_json::from_str(&support::ok(&out)).unwrap();
    assert_eq!(
        report["resumedWorkflows"],
        serde_json::json!([]),
        "{report}"
    );

    let approved = approve();
    support::ok(&approved);
    assert_eq!(record_of(&world, &id)["state"], "approved");
    let branch = record_of(&world, &id)["branch"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = world.git(&["show", &format!("{branch}:a.txt")]);
    assert_eq!(shown, "one\nfixed\nfixed\n");
}

#[test]
fn a_workflow_whose_run_is_killed_mid_phase_shows_stalled_until_a_follower_finishes_it() {
    let world = world();
    let id = kill_driver_after(&world, "sleepy-planner", "\"phase.started\"");

    // Every command that shows state says it: stalled, not awaiting approval or finished.
    let out = support::run(world.codehands().args(["sessions", "--json"]));
    let listed: serde_json::Value = serde_json::from_str(&support::ok(&out)).unwrap();
    let mine = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["sessionId"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(mine["shown"], "stalled", "{mine}");
    let out = support::run(world.codehands().args(["sessions"]));
    let table = support::ok(&out);
    let row = table.lines().find(|l| l.contains(&id[..8])).unwrap();
    assert!(row.contains("stalled"), "{table}");
    let out = support::run(world.codehands().args(["report", &id, "--json"]));
    let report: serde_json::Value = serde_json::from_str(&support::ok(&out)).unwrap();
    assert_eq!(report["ended"]["kind"], "stalled", "{report}");
    assert_eq!(report["ended"]["phase"], "plan", "{report}");
    let out = support::run(world.codehands().args(["report", &id]));
    assert!(
        support::ok(&out).contains("stalled: the workflow's driver went away"),
        "{}",
        support::text(&out.stdout)
    );
    // Looking did not start a driver: still stalled.
    assert_eq!(record_of(&world, &id)["state"], "awaiting_approval");
    let out = support::run(world.codehands().args(["sessions", "--json"]));
    assert!(support::ok(&out).contains("\"shown\":\"stalled\""));

    // `events --follow` goes on with it and follows every phase to the workflow's end.
    let out = support::run(
        world
            .codehands()
            .args(["events", &id, "--follow", "--json"]),
    );
    let followed = support::ok(&out);
    let events: Vec<serde_json::Value> = followed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "phase.started")
        .map(|e| e["payload"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        started,
        ["plan", "implement", "review", "implement", "review"],
        "{followed}"
    );
    assert_eq!(events.last().unwrap()["type"], "approval.requested");
    let out = support::run(world.codehands().args(["sessions", "--json"]));
    let listed = support::ok(&out);
    assert!(
        !listed.contains("\"shown\""),
        "the state says it all now: {listed}"
    );
    assert_eq!(record_of(&world, &id)["state"], "awaiting_approval");
    support::ok(&support::run(
        world.codehands().current_dir(&world.repo).args([
            "approve",
            &id,
            "-m",
            "The workflow's change",
        ]),
    ));
    assert_eq!(record_of(&world, &id)["state"], "approved");
}

#[tokio::test]
async fn a_read_only_phase_in_a_box_gets_a_worktree_it_cannot_write() {
    let world = world();
    let runner = runner(&world);
    let text = r#"
name = "read-only-box"

[[phase]]
name = "plan"
kind = "plan"
agent = "bad-planner"
permissions = "read-only"
prompt = ["Plan:", "{task}"]

[[phase]]
name = "implement"
kind = "implement"
agent = "coder"
permissions = "edit"
prompt = ["Do:", "{task}", "Plan:", "{previous}"]
"#;
    let mut options = options(&world, text);
    options.isolation = Isolation::Box;
    let id = options.session_id;
    let events = suite::collect(runner.run_workflow(options).await.unwrap()).await;
    support::assert_contiguous(&events);
    // The planner's write met a read-only worktree: nothing stray, the phase kept its rules.
    assert!(
        events
            .iter()
            .all(|e| !matches!(e.body, EventBody::TaskFailed(_))),
        "{events:#?}"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval
    );
    let diff = runner.diff(&id).await.unwrap();
    let files: Vec<&str> = diff.stat.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["a.txt"], "{}", diff.patch);
}
