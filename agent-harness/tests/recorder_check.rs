//! The check each agent crate's `record` test runs: on a crate folder made
//! here, each missing piece is one problem naming the file and what to do.

use agent_harness::{Fixtures, Recorder, Scenario};
use model_server::{Script, Turn};

fn scenario(name: &'static str) -> Scenario {
    Scenario {
        name,
        about: "a test",
        prompt: "do it",
        files: &[("README.md", "hi\n")],
        test_command: None,
        model: None,
        notes: None,
        budget_usd: 0.5,
        extra_env: &[],
        needs_npm: false,
        answers: &[],
        script: |_| Script::new([Turn::text("done")]),
    }
}

fn recorder(crate_dir: &std::path::Path, names: &[&'static str]) -> Recorder {
    Recorder {
        program: "Test 1.0".into(),
        record_name: "test",
        fixtures: Fixtures::of(crate_dir),
        scenarios: names.iter().map(|n| scenario(n)).collect(),
        agent: || Err("not needed".into()),
        provider_env: |_| Vec::new(),
    }
}

fn touch(path: std::path::PathBuf) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "{}\n").unwrap();
}

#[test]
fn complete_recordings_have_no_problem() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Fixtures::of(dir.path());
    for name in ["one", "two"] {
        touch(fixtures.path(name));
        touch(fixtures.snapshot_path(name));
    }
    assert_eq!(
        recorder(dir.path(), &["one", "two"]).problems(),
        Vec::<String>::new()
    );
}

#[test]
fn each_missing_recording_snapshot_or_scenario_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Fixtures::of(dir.path());
    touch(fixtures.path("recorded"));
    touch(fixtures.snapshot_path("recorded"));
    touch(fixtures.path("no-snapshot"));
    touch(fixtures.path("orphan"));
    touch(fixtures.snapshot_path("orphan"));
    let problems = recorder(dir.path(), &["recorded", "no-snapshot", "unrecorded"]).problems();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems.iter().any(|p| p
            .contains("`unrecorded` has no recording tests/fixtures/unrecorded.jsonl")
            && p.contains("cargo xtask record test unrecorded")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("tests/fixtures/orphan.jsonl comes from no scenario")),
        "{problems:#?}"
    );
    assert!(
        problems.iter().any(|p| p.contains(
            "tests/fixtures/no-snapshot.jsonl has no snapshot tests/it/snapshots/it__fixtures__no-snapshot.snap"
        )),
        "{problems:#?}"
    );
}

#[test]
fn the_tested_names_must_be_the_recordings_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Fixtures::of(dir.path());
    touch(fixtures.path("a"));
    touch(fixtures.path("b"));
    fixtures.assert_tested(&["b", "a"]);
    let missing = std::panic::catch_unwind(|| fixtures.assert_tested(&["a"]));
    assert!(missing.is_err(), "a fixture without a snapshot test fails");
}

#[test]
fn a_written_recording_reads_back_line_for_line() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Fixtures::of(dir.path());
    let lines = vec!["{\"a\":1}".to_owned(), "{\"b\":2}".to_owned()];
    let path = fixtures.write("made", &lines).unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "{\"a\":1}\n{\"b\":2}\n"
    );
    assert_eq!(fixtures.lines("made"), lines);
    assert_eq!(fixtures.names(), ["made"], "no partial file is left");
}
