//! The agents of a build: every one comes from the registry, runner-core and runner-contract
//! name none of them, and session records written when agents were a closed list still read.

use std::path::Path;

use codehands::RunnerBuilder;
use runner_contract::AgentName;
use runner_core::SessionStore;

fn setup(home: &Path) -> codehands::Setup {
    let mut setup = codehands::Setup::from_env().unwrap();
    setup.home = runner_contract::Home::new(home);
    setup
}

/// Every file under `dir` (recursively) with one of `exts`.
fn sources(dir: &Path, exts: &[&str], out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                sources(&path, exts, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| exts.iter().any(|x| e == *x))
        {
            out.push(path);
        }
    }
}

#[test]
fn runner_core_and_the_contract_name_no_agent() {
    let home = tempfile::tempdir().unwrap();
    let (registry, _) = RunnerBuilder::new(setup(home.path()))
        .load_home(false)
        .agents()
        .unwrap();
    assert!(registry.len() >= 3, "{registry:?}");
    // Each registered name, and each of its words long enough to be a name of its own
    // (`claude` of `claude-code`), must appear nowhere in runner-core or runner-contract.
    let mut words: Vec<String> = Vec::new();
    for (name, _) in registry.iter() {
        words.push(name.to_string());
        words.extend(
            name.as_str()
                .split('-')
                .filter(|w| w.len() >= 5)
                .map(str::to_owned),
        );
    }
    // The fake agent's name is also an ordinary word ("a fake store"): its own crate's
    // name is what must not appear.
    words.retain(|w| w != "fake");
    words.push("runner-fake".into());
    words.push("runner_fake".into());
    let mut files = Vec::new();
    for krate in ["runner-core", "runner-contract"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate);
        let before = files.len();
        sources(&dir, &["rs", "toml", "md"], &mut files);
        assert!(
            files.len() - before > 10,
            "read {krate}'s sources: {files:?}"
        );
    }
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap().to_lowercase();
        for word in &words {
            if text.contains(word.as_str()) {
                found.push(format!("{} mentions `{word}`", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "runner-core or runner-contract names agents:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_built_in_agent_is_in_the_registry_with_its_origin() {
    let home = tempfile::tempdir().unwrap();
    let (registry, problems) = RunnerBuilder::new(setup(home.path())).agents().unwrap();
    assert!(problems.is_empty());
    for name in ["claude-code", "codex", "fake"] {
        let entry = registry.entry(&AgentName::parse(name).unwrap()).unwrap();
        assert_eq!(entry.origin, runner_core::AgentOrigin::BuiltIn, "{name}");
        assert!(
            entry.agent.version_probe().is_some(),
            "{name} says its version"
        );
    }
}

#[test]
fn records_written_before_names_were_open_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::on_disk(dir.path());
    // Records exactly as the closed enum wrote them (`"agent": "claude-code"` …).
    for (id, agent) in [
        ("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42", "claude-code"),
        ("4f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42", "codex"),
        ("5f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42", "fake"),
    ] {
        let record = format!(
            r#"{{"sessionId":"{id}","state":"awaiting_approval","agent":"{agent}","repoPath":"/r","repoKey":"r-0123456789ab","worktreePath":"/w","branch":"codehands/x-{short}","baseCommit":"0123456789abcdef0123456789abcdef01234567","prompt":"p","model":null,"budgetUsd":0.5,"agentSessionId":null,"lastSeq":14,"failure":null,"commit":null,"createdAt":"2026-12-01T10:00:00.000Z","updatedAt":"2026-12-01T10:00:01.000Z"}}"#,
            short = &id[..8]
        );
        std::fs::write(dir.path().join(format!("{id}.json")), record).unwrap();
        let read = store
            .get(&runner_contract::SessionId::parse(id).unwrap())
            .unwrap();
        assert_eq!(read.agent.as_str(), agent);
    }
}

#[test]
fn a_caller_agent_cannot_take_a_built_in_name() {
    struct Impostor;
    impl runner_contract::Agent for Impostor {
        fn name(&self) -> AgentName {
            AgentName::parse("codex").unwrap()
        }
        fn capabilities(&self) -> runner_contract::AgentCapabilities {
            runner_contract::AgentCapabilities::default()
        }
        fn invocation(
            &self,
            _: &runner_contract::AgentRequest,
        ) -> runner_contract::Result<runner_contract::Invocation> {
            Err(runner_contract::Error::invalid_input("never run"))
        }
        fn parser(&self) -> Box<dyn runner_contract::AgentParser> {
            Box::new(runner_contract::text_lines::TextLinesParser::default())
        }
    }
    let home = tempfile::tempdir().unwrap();
    let err = RunnerBuilder::new(setup(home.path()))
        .agent(std::sync::Arc::new(Impostor))
        .agents()
        .unwrap_err();
    assert!(
        err.to_string().contains("taken by a built-in agent"),
        "{err}"
    );
}
