//! The seeds are real shapes: each file-kind seed is accepted by its reader, and every
//! target goes through every seed.

use std::path::Path;

use runner_contract::{RepoProfile, SessionRecord};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn seed(target: &str, name: &str) -> Vec<u8> {
    fuzz_harness::seeds(target, repo())
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no seed {name} for {target}"))
        .1
}

#[test]
fn the_record_seeds_are_accepted_by_the_strict_readers() {
    serde_json::from_slice::<SessionRecord>(&seed("records", "session-record.json")).unwrap();
    serde_json::from_slice::<RepoProfile>(&seed("records", "repo-profile.json")).unwrap();
}

#[test]
fn the_profile_and_plugin_seeds_are_accepted() {
    let text = String::from_utf8(seed("profiles_and_plugins", "profile.toml")).unwrap();
    codehands::profile::Profile::parse(&text, Path::new("/agents/ruff-fix.toml"), Some("ruff-fix"))
        .unwrap();
    let text = String::from_utf8(seed("profiles_and_plugins", "profile-json-lines.toml")).unwrap();
    codehands::profile::Profile::parse(&text, Path::new("/agents/patchbot.toml"), Some("patchbot"))
        .unwrap();
    for (name, which) in [
        ("describe.json", 0),
        ("describe-secrets.json", 0),
        ("invocation.json", 1),
        ("events.json", 2),
    ] {
        let answers = agent_plugin_abi::host::read_answers(&seed("profiles_and_plugins", name));
        assert!(answers[which].is_ok(), "{name}: {answers:?}");
    }
}

#[test]
fn every_target_goes_through_every_seed_and_agent_output_has_the_fixtures() {
    for target in fuzz_harness::TARGETS {
        let seeds = fuzz_harness::seeds(target, repo()).unwrap();
        assert!(!seeds.is_empty(), "{target} has no seed");
        if *target == "patch" && !fuzz_harness::patch::git_available() {
            // tests/patch.rs fails under CI=true when git is missing.
            eprintln!("skipped the patch seeds: git is not installed");
            continue;
        }
        for (_, data) in seeds {
            assert!(fuzz_harness::run(target, &data));
        }
    }
    assert!(fuzz_harness::seeds("agent_output", repo()).unwrap().len() > 40);
}

#[test]
fn the_acp_seeds_are_what_the_sdk_wrote_and_the_dispatcher_takes_each_line() {
    use codehands::acp_wire::{Incoming, decode};
    use codehands::client_lines::ClientLines;
    let prompts = seed("acp_server", "sdk-prompts-00");
    let mut lines = ClientLines::new(&prompts[1..], codehands::acp_wire::MAX_LINE);
    let mut taken = Vec::new();
    while let Some(frame) = lines.next_blocking() {
        taken.push(match decode(&frame) {
            Incoming::Request { call: Ok(_), .. } => "request",
            Incoming::Reply { reply: Ok(_), .. } => "reply",
            other => panic!("{frame:?} is {other:?}"),
        });
    }
    assert_eq!(
        taken,
        [
            "request", "request", "request", "reply", "reply", "request", "reply"
        ]
    );
    let broken = seed("acp_server", "all-with-broken-lines");
    assert!(std::str::from_utf8(&broken).is_err() && broken.contains(&0));
}
