//! The person's settings through the real command line: `[box] read` in their config brings
//! a folder into the box and nothing beside it; the repository's file counts as committed,
//! never as the agent left it; a bad file refuses the start with its line and makes nothing.

use crate::support;

use std::path::Path;

use support::World;

/// A profile agent (plain text) whose shell script reads what the test names.
fn profile(world: &World, script: &str) -> String {
    let text = format!(
        "name = \"reader\"\nprogram = \"/bin/sh\"\nargs = [\"-c\", {script:?}]\nparser = \"text\"\n"
    );
    let path = world.dir.path().join("reader.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn run(world: &World, profile: &str) -> std::process::Output {
    support::run(
        world
            .codehands()
            .env("NO_COLOR", "1")
            .current_dir(&world.repo)
            .args([
                "run",
                ".",
                "read",
                "--agent-file",
                profile,
                "--agent",
                "reader",
            ])
            .args(["--then", "keep", "--json"]),
    )
}

/// Every message the agent printed.
fn said(out: &std::process::Output) -> String {
    support::json_lines(out)
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["payload"]["text"].as_str().unwrap_or_default().to_owned() + "\n")
        .collect()
}

/// Plants `name` holding `text` under the agent's HOME; its path.
fn plant(world: &World, name: &str, text: &str) -> String {
    let path = world.agent_home.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_folder_the_settings_name_is_read_in_the_box_and_nothing_beside_it() {
    let world = World::demo();
    let sdk = plant(&world, "sdk/VERSION", "sdk-1.2\n");
    let beside = plant(&world, "notes/private.txt", "private-notes\n");
    let script = format!("cat {sdk}; cat {beside} || echo beside-refused");
    let agent = profile(&world, &script);

    let before = run(&world, &agent);
    support::ok(&before);
    let text = said(&before);
    assert!(!text.contains("sdk-1.2"), "no settings, no sdk: {text}");

    std::fs::write(
        world.home.root().join("config.toml"),
        "[box]\nread = [\"~/sdk\"]\n",
    )
    .unwrap();
    let after = run(&world, &agent);
    support::ok(&after);
    let text = said(&after);
    assert!(text.contains("sdk-1.2"), "the named folder is read: {text}");
    assert!(!text.contains("private-notes"), "{text}");
    assert!(text.contains("beside-refused"), "{text}");
}

#[test]
fn the_repos_file_counts_as_committed_not_as_the_checkout_holds_it() {
    let world = World::demo();
    let sdk = plant(&world, "sdk/VERSION", "sdk-1.2\n");
    let tools = plant(&world, "tools/VERSION", "tools-3.4\n");
    std::fs::write(
        world.repo.join(".codehands.toml"),
        "[box]\nread = [\"~/sdk\"]\n",
    )
    .unwrap();
    world.git(&["add", ".codehands.toml"]);
    world.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-qm",
        "settings",
    ]);
    // Changed in the checkout and not committed: not read.
    std::fs::write(
        world.repo.join(".codehands.toml"),
        "[box]\nread = [\"~/tools\"]\n",
    )
    .unwrap();
    let agent = profile(&world, &format!("cat {sdk} {tools}; true"));
    let out = run(&world, &agent);
    support::ok(&out);
    let text = said(&out);
    assert!(text.contains("sdk-1.2"), "{text}");
    assert!(!text.contains("tools-3.4"), "{text}");
}

#[test]
fn a_bad_settings_file_refuses_the_start_with_its_line_and_makes_nothing() {
    let world = World::demo();
    std::fs::create_dir_all(world.home.root()).unwrap();
    let config = world.home.root().join("config.toml");
    std::fs::write(&config, "[box]\nread = [\"~/.ssh\"]\n").unwrap();
    let agent = profile(&world, "echo hi");
    let out = run(&world, &agent);
    assert!(!out.status.success());
    let err = support::text(&out.stderr);
    assert!(
        err.contains(&format!("{} line 2", config.display())),
        "{err}"
    );
    assert!(err.contains("secrets"), "{err}");
    assert!(world.worktree_dirs().is_empty(), "no worktree is made");
    assert_eq!(world.branches(), ["main"], "no branch is made");
    let sessions = world.home.root().join("sessions");
    let none = !sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none();
    assert!(none, "no session record is made");
    assert!(Path::new(&config).exists());
}

/// A JSON-lines profile agent that runs `mytool` and reports the command as it ended.
const TOOL_RUNNER: &str = r#"
name = "tool-runner"
program = "PROGRAM"
parser = "json-lines"
[json-lines]
kind = "type"
command = { when = "ran", command = "cmd", exit-code = "code", output = "out", id = "call" }
result = { when = "done", text = "summary" }
"#;

#[test]
fn a_program_the_box_hides_is_said_and_the_settings_bring_it_in() {
    let world = World::demo();
    // A tool of the caller's, on their PATH under their home, as rustup's cargo is.
    let bin = world.agent_home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("mytool"), "#!/bin/sh\necho tool-ran\n").unwrap();
    let agent = world.dir.path().join("agent/run.sh");
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    std::fs::write(
        &agent,
        "#!/bin/sh\nout=$(mytool 2>&1); code=$?\n\
         printf '{\"type\":\"ran\",\"cmd\":\"mytool\",\"code\":%d,\"out\":\"%s\",\"call\":\"1\"}\\n' \"$code\" \"$out\"\n\
         printf '{\"type\":\"done\",\"summary\":\"ok\"}\\n'\n",
    )
    .unwrap();
    for file in [bin.join("mytool"), agent.clone()] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let profile = world.dir.path().join("tool-runner.toml");
    std::fs::write(
        &profile,
        TOOL_RUNNER.replace("PROGRAM", agent.to_str().unwrap()),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = |json: bool| {
        let mut cmd = world.codehands();
        cmd.env("NO_COLOR", "1")
            .env("PATH", &path)
            .current_dir(&world.repo)
            .args(["run", ".", "build it", "--agent-file"])
            .arg(&profile)
            .args(["--agent", "tool-runner", "--then", "keep"]);
        if json {
            cmd.arg("--json");
        }
        support::run(&mut cmd)
    };

    let events = support::json_lines(&run(true));
    let hidden: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "box.hidden")
        .collect();
    assert_eq!(hidden.len(), 1, "{events:#?}");
    let payload = &hidden[0]["payload"];
    assert_eq!(payload["program"], "mytool");
    assert_eq!(payload["found"], bin.join("mytool").display().to_string());
    assert_eq!(
        payload["folder"],
        bin.display().to_string(),
        "~/.local holds the keyrings: its bin folder is named"
    );
    let human = support::text(&run(false).stdout);
    assert!(
        human.contains("mytool is not in the box") && human.contains("[box] read"),
        "the live view says it and how to bring it in: {human}"
    );

    std::fs::write(
        world.home.root().join("config.toml"),
        "[box]\nread = [\"~/.local/bin\"]\n",
    )
    .unwrap();
    let events = support::json_lines(&run(true));
    assert!(
        !events.iter().any(|e| e["type"] == "box.hidden"),
        "{events:#?}"
    );
    let ran = events
        .iter()
        .find(|e| e["type"] == "command.finished")
        .unwrap();
    assert_eq!(ran["payload"]["exitCode"], 0, "{ran}");
    assert_eq!(ran["payload"]["output"], "tool-ran");
}
