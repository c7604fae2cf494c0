//! A profile agent in its box, by default: an interpreter and a script of the caller's home
//! run and read nothing else of that home; and every program codehands asks something of
//! outside the box (the version probe of a session, `agents`, `doctor`) sees none of the
//! caller's secrets and runs in a folder of its own, while `report` runs nothing; as root
//! and as an unprivileged test user.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::World;

/// Variables of the caller no program run for a session may see.
const SECRETS: &[(&str, &str)] = &[
    ("SSH_AUTH_SOCK", "/tmp/ssh-canary/agent.sock"),
    ("GITHUB_TOKEN", "ghp_canary_4a1f"),
    ("AWS_SECRET_ACCESS_KEY", "aws-canary-93b0"),
];

/// Whether a box can be made here; else a skip (a failure under CI=true).
fn box_support() -> bool {
    match agent_box::probe::support(std::env::var("PATH").ok().as_deref()) {
        Ok(_) => true,
        Err(why) => {
            runner_testkit::skip(&format!("no box on this machine: {why}"));
            false
        }
    }
}

fn write(path: &Path, text: &str, mode: u32) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_owned()
}

/// `codehands ARGS` in the world's repo, with the caller's secrets in its environment.
fn codehands(world: &World, args: &[&str]) -> Output {
    let mut command = world.codehands();
    command
        .env("NO_COLOR", "1")
        .envs(SECRETS.iter().copied())
        .current_dir(&world.repo)
        .args(args);
    support::run(&mut command)
}

/// The files of the caller's home the scribe tries besides its own script.
const OTHERS: &[&str] = &[
    ".ssh/id_rsa",
    "scribe/notes.txt",
    ".local/share/keyrings/login.keyring",
    ".cargo/credentials.toml",
    ".bash_history",
];

/// The scribe: a Python script run by a venv's Python, both in the caller's home. It tries
/// to read each of [`OTHERS`], lists the home, and writes its change.
const SCRIBE: &str = r#"import os, sys
home = HOME
sys.stdin.read()
for name in OTHERS:
    try:
        open(os.path.join(home, name)).read()
        print(name + ": GOT", flush=True)
    except OSError:
        print(name + ": refused", flush=True)
try:
    print("listed: " + ",".join(sorted(os.listdir(home))), flush=True)
except OSError:
    print("listed: refused", flush=True)
with open("app.txt", "w") as f:
    f.write("written by the scribe\n")
print("done", flush=True)
"#;

#[test]
fn a_profile_of_an_interpreter_and_a_script_in_the_home_runs_boxed_and_reads_nothing_else() {
    if !box_support() {
        return;
    }
    let python = Path::new("/usr/bin/python3");
    if !python.is_file() {
        runner_testkit::skip("no /usr/bin/python3 to make a venv with");
        return;
    }
    let world = World::new(&[("app.txt", "old\n")]);
    let home = &world.agent_home;
    for name in OTHERS.iter().filter(|n| !n.starts_with(".ssh")) {
        write(&home.join(name), "HOME-SECRET", 0o600);
    }
    write(&home.join(".ssh/id_rsa"), "HOME-SECRET", 0o600);
    let venv = home.join(".venv");
    let made = Command::new(python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(made.status.success(), "python3 -m venv: {made:?}");
    let script = SCRIBE
        .replace("HOME", &format!("{:?}", home.display().to_string()))
        .replace("OTHERS", &format!("{OTHERS:?}"));
    let scribe = write(&home.join("scribe/scribe.py"), &script, 0o644);
    let interpreter = venv.join("bin/python");
    let profile = write(
        &world.dir.path().join("scribe.toml"),
        &format!(
            "name = \"scribe\"\nprogram = {:?}\nargs = [{:?}]\nparser = \"text\"\n",
            interpreter.display().to_string(),
            scribe.display().to_string()
        ),
        0o644,
    );

    // The control: the same program, unboxed, reads every file.
    let control = Command::new(&interpreter)
        .arg(&scribe)
        .current_dir(world.dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let seen = support::text(&control.stdout);
    for name in OTHERS {
        assert!(seen.contains(&format!("{name}: GOT")), "control: {seen}");
    }

    let run = codehands(
        &world,
        &[
            "run",
            ".",
            "Write app.txt.",
            "--agent-file",
            profile.to_str().unwrap(),
            "--agent",
            "scribe",
            "--json",
        ],
    );
    let events = support::json_lines(&run);
    let messages: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "message")
        .filter_map(|e| e["payload"]["text"].as_str())
        .collect();
    for name in OTHERS {
        assert!(
            messages.contains(&format!("{name}: refused").as_str()),
            "{name} was read in the box: {messages:?}\n{}",
            support::text(&run.stderr)
        );
    }
    let listed = messages
        .iter()
        .find_map(|m| m.strip_prefix("listed: "))
        .expect("the scribe listed the home");
    assert!(
        listed.split(',').all(|n| n == ".venv" || n == "scribe"),
        "only the venv and the script's folder are in the box's view of the home: {listed}"
    );
    assert!(messages.contains(&"done"), "{messages:?}");
    assert!(
        events.iter().any(|e| e["type"] == "approval.requested"),
        "{events:?}"
    );
    // It ran boxed: the box's plan binds the venv and the script, nothing else of the home.
    let id = events[0]["sessionId"].as_str().unwrap();
    let id: runner_contract::SessionId = id.parse().unwrap();
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(world.home.run_dir(&id).join("box.json")).unwrap())
            .unwrap();
    let real_home = home.canonicalize().unwrap();
    let in_home: Vec<&str> = plan["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .filter(|t| Path::new(t).starts_with(&real_home))
        .collect();
    let expected = [
        real_home.join(".venv").display().to_string(),
        real_home.join("scribe/scribe.py").display().to_string(),
    ];
    assert!(
        !in_home.is_empty() && in_home.iter().all(|t| expected.iter().any(|e| e == t)),
        "the box binds of the home only the venv and the script: {in_home:?}"
    );
}

/// The seer: a program outside the home whose version call writes what it sees (its folder,
/// HOME, the names of its variables) to `SEEN`, then answers.
const SEER: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then
  { echo "cwd=$(pwd -P)"; echo "HOME=$HOME"; env | cut -d= -f1; } > 'SEEN'
  echo "seer 2.0.1"
  exit 0
fi
cat > /dev/null
echo "looked"
"#;

struct Seer {
    world: World,
    program: PathBuf,
    profile: String,
    seen: PathBuf,
}

impl Seer {
    fn new() -> Self {
        let world = World::new(&[("a.txt", "a\n")]);
        let seen = world.dir.path().join("seen.txt");
        let program = write(
            &world.dir.path().join("seer/seer"),
            &SEER.replace("SEEN", &seen.display().to_string()),
            0o755,
        );
        let profile = write(
            &world.dir.path().join("seer.toml"),
            &format!(
                "name = \"seer\"\nprogram = {:?}\nparser = \"text\"\nversion-args = [\"--version\"]\n",
                program.display().to_string()
            ),
            0o644,
        );
        Self {
            world,
            program,
            profile: profile.display().to_string(),
            seen,
        }
    }

    /// What the last version call saw: its folder, HOME and variable names; and removes it.
    fn take_seen(&self) -> (PathBuf, String, Vec<String>) {
        let text = std::fs::read_to_string(&self.seen)
            .unwrap_or_else(|e| panic!("the version call wrote nothing ({e})"));
        std::fs::remove_file(&self.seen).unwrap();
        let mut cwd = PathBuf::new();
        let mut home = String::new();
        let mut names = Vec::new();
        for line in text.lines() {
            if let Some(dir) = line.strip_prefix("cwd=") {
                cwd = dir.into();
            } else if let Some(value) = line.strip_prefix("HOME=") {
                home = value.to_owned();
            } else {
                names.push(line.to_owned());
            }
        }
        (cwd, home, names)
    }

    fn assert_no_secret(&self, what: &str, names: &[String]) {
        for (secret, _) in SECRETS {
            assert!(
                !names.iter().any(|n| n == secret),
                "{what}: {secret} reached the version call: {names:?}"
            );
        }
    }

    /// `codehands run` of the seer, by `codehands` (the caller's or the test user's).
    fn run_with(&self, codehands: impl FnOnce(&[&str]) -> Output) -> Output {
        codehands(&[
            "run",
            ".",
            "Look.",
            "--agent-file",
            &self.profile,
            "--agent",
            "seer",
            "--json",
        ])
    }

    /// The session `run` made, once it awaits approval and its version is recorded.
    fn recorded_session(&self, run: &Output) -> runner_contract::SessionId {
        let events = support::json_lines(run);
        assert!(
            events.iter().any(|e| e["type"] == "approval.requested"),
            "{events:?}\n{}",
            support::text(&run.stderr)
        );
        let id = events[0]["sessionId"].as_str().unwrap().parse().unwrap();
        let recorded = self.world.home.run_dir(&id).join("agent-version.json");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !recorded.exists() {
            assert!(Instant::now() < deadline, "the version was never recorded");
            std::thread::sleep(Duration::from_millis(20));
        }
        id
    }

    /// The caller's folder and the world's files are not where a probe runs.
    fn assert_neutral(&self, what: &str, cwd: &Path) {
        let repo = self.world.repo.canonicalize().unwrap();
        assert!(
            !cwd.starts_with(&repo)
                && cwd
                    .file_name()
                    .is_some_and(|n| { n.to_string_lossy().starts_with("probe-") }),
            "{what}: the version call ran in {}, not a folder of its own",
            cwd.display()
        );
        assert!(!cwd.exists(), "{what}: its folder is removed after");
    }
}

#[test]
fn every_version_call_sees_no_secret_of_the_caller_and_runs_in_a_folder_of_its_own() {
    if !box_support() {
        return;
    }
    let seer = Seer::new();
    let world = &seer.world;

    // The control: the same program asked directly, as the caller, sees it all.
    let control = Command::new(&seer.program)
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .envs(SECRETS.iter().copied())
        .current_dir(&world.repo)
        .output()
        .unwrap();
    assert!(control.status.success(), "{control:?}");
    let (cwd, _, names) = seer.take_seen();
    for (secret, _) in SECRETS {
        assert!(names.iter().any(|n| n == secret), "control: {names:?}");
    }
    assert_eq!(cwd, world.repo.canonicalize().unwrap());

    // A session's probe, at its start, boxed by default: its HOME is its folder too.
    let run = seer.run_with(|args| codehands(world, args));
    let id = seer.recorded_session(&run);
    let run_dir = world.home.run_dir(&id);
    let recorded = run_dir.join("agent-version.json");
    let (cwd, home, names) = seer.take_seen();
    seer.assert_no_secret("the session's probe", &names);
    seer.assert_neutral("the session's probe", &cwd);
    assert!(
        cwd.starts_with(run_dir.canonicalize().unwrap()),
        "the session's probe runs in a folder of its run: {}",
        cwd.display()
    );
    assert_eq!(
        Path::new(&home).file_name(),
        cwd.file_name(),
        "a boxed session's probe has its folder as HOME: {home}"
    );

    // `agents` and `doctor`, outside any session: the caller's HOME, but no secret.
    for args in [
        vec!["agents", "--json", "--agent-file", &seer.profile],
        vec!["doctor", "--json", "--agent-file", &seer.profile],
    ] {
        let out = codehands(world, &args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        let (cwd, home, names) = seer.take_seen();
        seer.assert_no_secret(args[0], &names);
        seer.assert_neutral(args[0], &cwd);
        assert_eq!(Path::new(&home), world.agent_home, "{}", args[0]);
    }

    // `report` of a session whose version was not recorded says so, and runs nothing.
    std::fs::remove_file(&recorded).unwrap();
    let id = id.to_string();
    let out = codehands(
        world,
        &["report", &id, "--json", "--agent-file", &seer.profile],
    );
    let report: serde_json::Value = serde_json::from_str(&support::ok(&out)).unwrap();
    assert_eq!(report["agentProgram"], seer.program.display().to_string());
    assert_eq!(report["agentVersion"], serde_json::Value::Null, "{report}");
    let text = support::ok(&codehands(
        world,
        &["report", &id, "--agent-file", &seer.profile],
    ));
    assert!(text.contains("(version unknown)"), "{text}");
    assert!(
        !seer.seen.exists(),
        "report ran the agent's program: {}",
        std::fs::read_to_string(&seer.seen).unwrap_or_default()
    );
}

#[test]
fn as_an_unprivileged_user_the_version_call_sees_no_secret_either() {
    if !box_support() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        // The test above already runs as this unprivileged caller.
        eprintln!("not root: the test above is this caller's");
        return;
    }
    let (uid, gid) = runner_testkit::test_user::test_user();
    let seer = Seer::new();
    let world = &seer.world;
    // The world becomes the user's, and the folders above it let them through, as a home's
    // would (the target folder may be closed to others).
    let chown = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(world.dir.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let as_user = |args: &[&str]| {
        let mut command = Command::new("setpriv");
        command
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
            .arg("--clear-groups")
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_codehands"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &world.agent_home)
            .env("CODEHANDS_HOME", world.home.root())
            .env("NO_COLOR", "1")
            .envs(SECRETS.iter().copied())
            .current_dir(&world.repo);
        support::run(&mut command)
    };
    let reachable = as_user(&["--version"]);
    if !reachable.status.success() {
        runner_testkit::skip(&format!(
            "the test user cannot run this build's codehands (a folder above it is closed): {}",
            support::text(&reachable.stderr)
        ));
        return;
    }
    let out = as_user(&["agents", "--json", "--agent-file", &seer.profile]);
    assert!(out.status.success(), "{out:?}");
    let (cwd, home, names) = seer.take_seen();
    seer.assert_no_secret("agents, as the user", &names);
    seer.assert_neutral("agents, as the user", &cwd);
    assert_eq!(Path::new(&home), world.agent_home);

    let run = seer.run_with(as_user);
    seer.recorded_session(&run);
    let (cwd, _, names) = seer.take_seen();
    seer.assert_no_secret("the session's probe, as the user", &names);
    seer.assert_neutral("the session's probe, as the user", &cwd);
}
