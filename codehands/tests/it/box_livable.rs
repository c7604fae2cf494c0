//! A box a developer can live in: their own toolchain under their home (rustup's cargo, with
//! the registry they fetched into) and their checkout's dependency folders (a venv, a
//! `node_modules`) work in the box, read-only, and approve commits only the agent's change.

use crate::support;

use std::path::{Path, PathBuf};

use support::World;

/// A JSON-lines profile agent that runs each command with `sh -c` and reports it, under its
/// label, as a `command.finished` with its exit code and the end of its output.
fn command_runner(world: &World, commands: &[(&str, &str)]) -> PathBuf {
    let mut script = String::from("#!/bin/sh\n");
    for (n, (label, command)) in commands.iter().enumerate() {
        script.push_str(&format!(
            "out=$(sh -c '{command}' 2>&1); code=$?\n\
             out=$(printf '%s' \"$out\" | tail -c 400 | tr -d '\"\\\\' | tr '\\n\\t' '  ')\n\
             printf '{{\"type\":\"ran\",\"cmd\":\"{label}\",\"code\":%d,\"out\":\"%s\",\"call\":\"{n}\"}}\\n' \"$code\" \"$out\"\n"
        ));
    }
    script.push_str("printf '{\"type\":\"done\",\"summary\":\"ok\"}\\n'\n");
    let agent = world.dir.path().join("runner/run.sh");
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    std::fs::write(&agent, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = world.dir.path().join("runner.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"runner\"\nprogram = \"{}\"\nparser = \"json-lines\"\n[json-lines]\nkind = \"type\"\n\
             command = {{ when = \"ran\", command = \"cmd\", exit-code = \"code\", output = \"out\", id = \"call\" }}\n\
             result = {{ when = \"done\", text = \"summary\" }}\n",
            agent.display()
        ),
    )
    .unwrap();
    profile
}

/// `codehands run` of the runner agent, boxed (the default), then approve; its events.
fn run_and_approve(
    world: &World,
    profile: &Path,
    env: &[(&str, String)],
) -> Vec<serde_json::Value> {
    let mut cmd = world.codehands();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.current_dir(&world.repo)
        .args(["run", ".", "work", "--agent-file"])
        .arg(profile)
        .args([
            "--agent", "runner", "--then", "approve", "-m", "work", "--json",
        ]);
    let out = support::run(&mut cmd);
    support::ok(&out);
    support::json_lines(&out)
}

/// Each command's exit code, by its command line.
fn exit_codes(events: &[serde_json::Value]) -> Vec<(String, i64, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "command.finished")
        .map(|e| {
            (
                e["payload"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["payload"]["exitCode"].as_i64().unwrap_or(-1),
                e["payload"]["output"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_rust_crate_tests_offline_with_the_callers_rustup_under_their_home() {
    let Some(cargo_home) = support::callers_cargo_home() else {
        return;
    };
    let world = support::offline_crate(&cargo_home);
    let profile = command_runner(
        &world,
        &[
            ("cargo test", "cargo test --offline"),
            ("edit", "echo // more >> src/lib.rs"),
        ],
    );
    let path = format!(
        "{}:{}",
        cargo_home.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let events = run_and_approve(&world, &profile, &[("PATH", path)]);
    let codes = exit_codes(&events);
    assert_eq!(codes[0].1, 0, "cargo test ran in the box: {codes:?}");
    assert!(codes[0].2.contains("test result: ok"), "{codes:?}");
    assert!(
        !events.iter().any(|e| e["type"] == "box.hidden"),
        "{events:#?}"
    );
    assert_eq!(
        support::session_branch_files(&world),
        ["src/lib.rs"],
        "never target/"
    );
}

#[test]
fn the_checkouts_venv_and_node_modules_are_usable_read_only_and_never_committed() {
    let world = World::new(&[
        (".gitignore", ".venv/\nnode_modules/\n"),
        ("app.py", "print('app')\n"),
    ]);
    // The checkout's own venv with a package in it, and a node module.
    support::checkout_venv(&world);
    std::fs::create_dir_all(world.repo.join("node_modules/dep")).unwrap();
    std::fs::write(
        world.repo.join("node_modules/dep/index.js"),
        "module.exports = 'from-node-modules';\n",
    )
    .unwrap();
    let node = Path::new("/usr/bin/node").is_file();
    let mut commands = vec![
        (
            "venv python",
            ".venv/bin/python -c \"import depmod; print(depmod.VALUE)\"",
        ),
        ("write venv", "echo changed > .venv/pwned"),
        (
            "write node_modules",
            "echo changed > node_modules/dep/index.js",
        ),
        ("edit", "echo x = 1 >> app.py"),
    ];
    if node {
        commands.push((
            "node",
            "node -e \"console.log(require(String(\\\"dep\\\")))\"",
        ));
    } else {
        eprintln!("node is not at /usr/bin/node: the node_modules part checks its binds only");
    }
    let profile = command_runner(&world, &commands);
    let events = run_and_approve(&world, &profile, &[]);
    let codes = exit_codes(&events);
    assert_eq!(codes[0].1, 0, "the venv's Python and package: {codes:?}");
    assert!(codes[0].2.contains("from-the-venv"), "{codes:?}");
    assert_ne!(codes[1].1, 0, "the venv is read-only: {codes:?}");
    assert_ne!(codes[2].1, 0, "node_modules is read-only: {codes:?}");
    if node {
        assert_eq!(codes[4].1, 0, "{codes:?}");
        assert!(codes[4].2.contains("from-node-modules"), "{codes:?}");
    }
    assert!(!world.repo.join(".venv/pwned").exists());
    assert_eq!(
        std::fs::read_to_string(world.repo.join("node_modules/dep/index.js")).unwrap(),
        "module.exports = 'from-node-modules';\n",
        "the person's copy is unchanged"
    );
    assert_eq!(support::session_branch_files(&world), ["app.py"]);
}
