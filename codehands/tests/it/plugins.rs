//! Agents from plugin libraries, loaded for real: the sample libraries of
//! agent-plugin-abi/samples/, built by cargo. A library that cannot be loaded is a clear
//! error naming the file; a plugin that panics or answers garbage fails its run, and the
//! same runner goes on running other sessions.

#![cfg(feature = "plugins")]

use crate::support;

use std::path::Path;

use codehands::RunnerBuilder;
use runner_contract::event::{FailureKind, TaskFailed};
use runner_contract::{AgentName, Event, EventBody, Runner, StartOptions};
use runner_core::{AgentOrigin, LocalRunner};
use runner_testkit::runner::collect;
use support::plugins::sample;
use support::{World, new_id, types};

const PROMPT: &str = "Write down what the plugin did.";

fn builder(world: &World) -> RunnerBuilder {
    RunnerBuilder::new(world.setup(world.settings())).load_home(false)
}

/// The error of loading `path` as the caller's own plugin.
fn load_error(world: &World, path: &Path) -> String {
    match builder(world).plugin(path).agents() {
        Ok((registry, _)) => panic!("{} loaded: {registry:?}", path.display()),
        Err(e) => e.to_string(),
    }
}

async fn run(
    runner: &LocalRunner,
    world: &World,
    agent: &str,
) -> (runner_contract::SessionId, Vec<Event>) {
    let id = new_id();
    let options = StartOptions::new(id, &world.repo, PROMPT, AgentName::parse(agent).unwrap());
    let events = collect(runner.start(options).await.unwrap()).await;
    (id, events)
}

fn failure(events: &[Event]) -> &TaskFailed {
    match events.last().map(|e| &e.body) {
        Some(EventBody::TaskFailed(failed)) => failed,
        _ => panic!("expected task.failed last: {:?}", types(events)),
    }
}

#[test]
fn a_library_of_another_abi_version_is_refused_from_its_header() {
    let world = World::new(&[("README.md", "hi\n")]);
    let path = sample("abi-v99");
    let message = load_error(&world, &path);
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("speaks plugin ABI version 99, and this codehands speaks version 1"),
        "{message}"
    );
    assert!(
        message.contains("rebuild the plugin against agent-plugin-abi"),
        "{message}"
    );
}

#[test]
fn a_library_without_the_entry_symbol_is_no_plugin() {
    let world = World::new(&[("README.md", "hi\n")]);
    let path = sample("no-entry");
    let message = load_error(&world, &path);
    assert!(
        message.contains(&format!(
            "{} is not a codehands agent plugin: it exports no `codehands_agent_plugin` symbol",
            path.display()
        )),
        "{message}"
    );
    assert!(message.contains("export_agent!"), "{message}");
}

#[test]
fn a_missing_file_or_one_that_is_no_library_is_refused() {
    let world = World::new(&[("README.md", "hi\n")]);
    let missing = world.dir.path().join("nothing-here.so");
    let message = load_error(&world, &missing);
    assert!(
        message.contains(&format!(
            "there is no plugin library at {}",
            missing.display()
        )),
        "{message}"
    );
    let text = world.dir.path().join("notes.so");
    std::fs::write(&text, "not a library\n").unwrap();
    let message = load_error(&world, &text);
    assert!(
        message.contains(&format!("cannot load {} as a plugin", text.display())),
        "{message}"
    );
    assert!(message.contains("shared library"), "{message}");
}

#[test]
fn the_homes_plugins_folder_loads_the_good_and_reports_the_broken() {
    let world = World::new(&[("README.md", "hi\n")]);
    let folder = world.home.root().join("plugins");
    std::fs::create_dir_all(&folder).unwrap();
    for name in ["tee", "abi-v99", "no-entry"] {
        std::fs::copy(sample(name), folder.join(format!("{name}.so"))).unwrap();
    }
    let (registry, problems) = RunnerBuilder::new(world.setup(world.settings()))
        .agents()
        .unwrap();
    let entry = registry
        .entry(&AgentName::parse("tee-notes").unwrap())
        .unwrap();
    assert_eq!(
        entry.origin,
        AgentOrigin::Plugin {
            path: folder.join("tee.so")
        }
    );
    let broken: Vec<_> = problems.iter().map(|p| p.path.clone()).collect();
    assert_eq!(
        broken,
        [folder.join("abi-v99.so"), folder.join("no-entry.so")]
    );
    assert!(
        problems[0].message.contains("ABI version 99"),
        "{problems:?}"
    );
    assert!(
        problems[1].message.contains("not a codehands agent plugin"),
        "{problems:?}"
    );
}

/// Whether the home's plugins folder gave the tee sample's agent, and the problems it kept.
fn tee_from_home(world: &World) -> (bool, Vec<codehands::LoadProblem>) {
    let (registry, problems) = RunnerBuilder::new(world.setup(world.settings()))
        .agents()
        .unwrap();
    let loaded = registry
        .entry(&AgentName::parse("tee-notes").unwrap())
        .is_ok();
    (loaded, problems)
}

#[test]
fn a_linked_library_or_a_world_writable_plugins_folder_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new(&[("README.md", "hi\n")]);
    let folder = world.home.root().join("plugins");
    std::fs::create_dir_all(&folder).unwrap();
    let real = world.dir.path().join("tee-real.so");
    std::fs::copy(sample("tee"), &real).unwrap();
    std::os::unix::fs::symlink(&real, folder.join("tee.so")).unwrap();
    let (loaded, problems) = tee_from_home(&world);
    assert!(!loaded, "a linked library was loaded");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].message.contains("is a symbolic link"),
        "{problems:?}"
    );

    std::fs::remove_file(folder.join("tee.so")).unwrap();
    std::fs::copy(sample("tee"), folder.join("tee.so")).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (loaded, problems) = tee_from_home(&world);
    assert!(!loaded, "a library in a world-writable folder was loaded");
    assert!(
        problems[0].message.contains("a folder any user may write")
            && problems[0].message.contains("chmod o-w"),
        "{problems:?}"
    );

    // Made private again, the same library loads.
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (loaded, problems) = tee_from_home(&world);
    assert!(loaded && problems.is_empty(), "{problems:?}");
}

#[tokio::test]
async fn a_plugin_agent_runs_and_its_change_is_approved() {
    let world = World::new(&[("README.md", "hi\n")]);
    let runner = builder(&world).plugin(sample("tee")).build().unwrap();
    let (id, events) = run(&runner, &world, "tee-notes").await;
    assert_eq!(
        types(&events),
        ["message", "task.finished", "approval.requested"],
        "{events:#?}"
    );
    match &events[0].body {
        EventBody::Message(message) => assert_eq!(message.text, PROMPT),
        other => panic!("{other:?}"),
    }
    let approved = runner.approve(&id, "Notes from the plugin").await.unwrap();
    let notes = world.git(&["show", &format!("{}:NOTES.md", approved.branch)]);
    assert_eq!(notes.trim_end(), PROMPT);
}

#[tokio::test]
async fn misbehaving_plugins_fail_their_run_and_the_runner_goes_on() {
    let world = World::new(&[("README.md", "hi\n")]);
    let (panics, garbage) = (sample("panics"), sample("garbage"));
    let runner = builder(&world)
        .plugin(sample("tee"))
        .plugin(&panics)
        .plugin(&garbage)
        .build()
        .unwrap();

    // A panic in invocation: the start fails as the agent being unavailable, naming the plugin.
    let (_, events) = run(&runner, &world, "panics-on-start").await;
    let failed = failure(&events);
    assert_eq!(failed.reason, FailureKind::AgentUnavailable);
    for needle in [
        format!("the plugin {} (agent `panics-on-start`)", panics.display()),
        "it panicked in invocation: the sample agent panics in invocation".to_owned(),
    ] {
        assert!(failed.message.contains(&needle), "{}", failed.message);
    }

    // A panic in parse_line: the run fails at that line.
    let (_, events) = run(&runner, &world, "panics-in-parser").await;
    let failed = failure(&events);
    assert_eq!(failed.reason, FailureKind::Internal);
    assert!(
        failed.message.contains(&format!(
            "the plugin {} (agent `panics-in-parser`): it panicked in parse_line: the sample parser panics on",
            panics.display()
        )),
        "{}",
        failed.message
    );

    // Answers that are not JSON, or JSON of the wrong shape.
    for agent in ["garbage-parser", "wrong-shape-parser"] {
        let (_, events) = run(&runner, &world, agent).await;
        assert_eq!(types(&events), ["task.failed"], "{agent}: {events:#?}");
        let failed = failure(&events);
        assert!(
            failed.message.contains(&format!(
                "the plugin {} (agent `{agent}`): it answered parse_line with garbage: its answer \
                 is not the JSON of plugin ABI version 1",
                garbage.display()
            )),
            "{}",
            failed.message
        );
    }

    // The same runner, and the plugins still loaded, run a good agent to the end.
    let (id, events) = run(&runner, &world, "tee-notes").await;
    assert_eq!(types(&events).last(), Some(&"approval.requested"));
    runner
        .approve(&id, "Notes after the failures")
        .await
        .unwrap();
}
