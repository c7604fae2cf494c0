//! The last test is part of the approval question: `run` says how it ended (and whether the
//! agent was boxed), and `--then approve` keeps a session whose last test failed unless
//! `--force`.

use crate::support;

use support::World;

/// A JSON-lines profile agent that changes a file and reports a test run that ends `CODE`.
const TESTER: &str = r#"
name = "tester"
program = "PROGRAM"
parser = "json-lines"
[json-lines]
kind = "type"
command = { when = "ran", command = "cmd", exit-code = "code", output = "out", id = "call", test = "is_test" }
result = { when = "done", text = "summary" }
"#;

fn tester(world: &World, code: i32) -> std::path::PathBuf {
    let agent = world.dir.path().join(format!("tester-{code}/run.sh"));
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    let out = if code == 0 { "1 passing" } else { "1 failing" };
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\necho change >> README.md\n\
             echo '{{\"type\":\"ran\",\"cmd\":\"npm test\",\"code\":{code},\"out\":\"{out}\",\"call\":\"1\",\"is_test\":true}}'\n\
             echo '{{\"type\":\"done\",\"summary\":\"done\"}}'\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = world.dir.path().join(format!("tester-{code}.toml"));
    std::fs::write(&profile, TESTER.replace("PROGRAM", agent.to_str().unwrap())).unwrap();
    profile
}

fn run(world: &World, profile: &std::path::Path, extra: &[&str]) -> std::process::Output {
    support::run(
        world
            .codehands()
            .env("NO_COLOR", "1")
            .current_dir(&world.repo)
            .args(["run", ".", "fix it", "--agent-file"])
            .arg(profile)
            .args(["--agent", "tester", "--then", "approve", "-m", "fix"])
            .args(extra),
    )
}

#[test]
fn a_failed_last_test_keeps_the_session_unless_forced() {
    let world = World::new(&[("README.md", "hello\n")]);
    let failing = tester(&world, 1);
    let out = run(&world, &failing, &[]);
    let said = format!(
        "{}{}",
        support::text(&out.stdout),
        support::text(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("last test: FAILED (npm test"), "{said}");
    assert!(said.contains("--force"), "{said}");
    let commits = world.git(&["rev-list", "--all", "--count"]);
    assert_eq!(commits.trim(), "1", "nothing committed");
    let sessions = support::ok(&support::run(world.codehands().args(["sessions"])));
    assert!(sessions.contains("awaiting_approval"), "kept: {sessions}");

    let forced = run(&world, &failing, &["--force"]);
    let said = support::ok(&forced);
    assert!(said.contains("approved: "), "{said}");
}

#[test]
fn a_passing_last_test_is_said_and_approved() {
    let world = World::new(&[("README.md", "hello\n")]);
    let passing = tester(&world, 0);
    let out = run(&world, &passing, &[]);
    let said = support::ok(&out);
    assert!(said.contains("last test: passed (npm test)"), "{said}");
    let note = support::text(&out.stderr);
    assert!(
        note.contains("isolation: box"),
        "run says the agent is boxed: {note}"
    );
    assert!(said.contains("approved: "), "{said}");
}
