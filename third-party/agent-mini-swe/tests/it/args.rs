//! The invocation the adapter builds: fixed flags and paths on argv, the run's
//! settings as one YAML line on stdin, the provider's variables and mini's quiet
//! settings in the environment; and the refusals.

use std::path::{Path, PathBuf};

use agent_mini_swe::{MiniSweAgent, install};
use runner_contract::{Agent, AgentRequest, ErrorKind, ResumeFrom, SessionId};
use runner_testkit::expect_error;

/// A config folder as `cargo xtask agents` makes it.
fn config_dir(root: &Path) -> PathBuf {
    let config = root.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join(install::DEFAULT_CONFIG), "agent: {}\n").unwrap();
    std::os::unix::fs::symlink("/dev/stdin", config.join(install::STDIN_CONFIG)).unwrap();
    config
}

fn request(worktree: &Path) -> AgentRequest {
    AgentRequest {
        permissions: Default::default(),
        session_id: SessionId::new_random(),
        worktree: worktree.to_path_buf(),
        prompt: "Fix the month.\n-c agent.mode=human".to_owned(),
        model: Some("openai/gpt-5-mini".to_owned()),
        budget_usd: 0.5,
        notes: Some("Use two spaces.\n".to_owned()),
        notes_file: None,
        test_command: Some("npm test".to_owned()),
        resume: None,
        provider_env: vec![
            ("OPENAI_BASE_URL".into(), "http://127.0.0.1:9/v1".into()),
            ("OPENAI_API_KEY".into(), "sk-secret".into()),
        ],
        read_only: false,
        tools: Default::default(),
    }
}

#[test]
fn a_run_puts_the_settings_on_stdin_and_only_flags_on_argv() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_dir(dir.path());
    let agent = MiniSweAgent::new("/opt/mini/bin/mini", &config);
    let invocation = agent.invocation(&request(dir.path())).unwrap();
    let root = dir.path().display().to_string();
    let args: Vec<String> = invocation
        .args
        .iter()
        .map(|a| a.to_string_lossy().replace(&root, "[dir]"))
        .collect();
    insta::assert_json_snapshot!("args", args);
    assert_eq!(invocation.program, Path::new("/opt/mini/bin/mini"));
    assert_eq!(invocation.stdin.len(), 1, "one line of YAML");
    let settings: serde_json::Value = serde_json::from_str(&invocation.stdin[0]).unwrap();
    insta::assert_json_snapshot!("stdin", settings);
    assert_eq!(
        invocation.close_stdin,
        runner_contract::StdinClose::AfterWrite,
        "mini reads its stdin config to the end"
    );
    let env: Vec<(&str, &str)> = invocation
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    insta::assert_json_snapshot!("env", env);
}

#[test]
fn without_a_model_mini_s_own_variable_must_name_one() {
    let dir = tempfile::tempdir().unwrap();
    let agent = MiniSweAgent::new("mini", config_dir(dir.path()));
    let mut plain = request(dir.path());
    plain.model = None;
    let message = expect_error(
        agent.invocation(&plain),
        ErrorKind::InvalidInput,
        "no model at all",
    );
    assert!(message.contains("MSWEA_MODEL_NAME"), "{message}");
    plain
        .provider_env
        .push(("MSWEA_MODEL_NAME".into(), "openai/gpt-5-mini".into()));
    let invocation = agent.invocation(&plain).unwrap();
    let settings: serde_json::Value = serde_json::from_str(&invocation.stdin[0]).unwrap();
    assert!(
        settings.get("model").is_none(),
        "mini reads the variable itself"
    );
    assert!(
        invocation
            .env
            .iter()
            .any(|(k, v)| k == "MSWEA_MODEL_NAME" && v == "openai/gpt-5-mini")
    );
    let mut bad = request(dir.path());
    bad.model = Some("gpt\n5".into());
    expect_error(
        agent.invocation(&bad),
        ErrorKind::InvalidInput,
        "a model with a newline",
    );
}

#[test]
fn a_missing_config_folder_says_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let message = expect_error(
        MiniSweAgent::without_config("mini").invocation(&request(dir.path())),
        ErrorKind::AgentUnavailable,
        "mini from PATH without a config folder",
    );
    assert!(message.contains("cargo xtask agents"), "{message}");
    let message = expect_error(
        MiniSweAgent::new("mini", dir.path().join("nowhere")).invocation(&request(dir.path())),
        ErrorKind::AgentUnavailable,
        "a config folder that is not there",
    );
    assert!(message.contains("mini.yaml"), "{message}");
}

#[test]
fn resume_is_refused_as_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let agent = MiniSweAgent::new("mini", config_dir(dir.path()));
    assert!(!agent.capabilities().resume);
    let resumed = AgentRequest {
        permissions: Default::default(),
        resume: Some(ResumeFrom {
            agent_session_id: "x".into(),
        }),
        ..request(dir.path())
    };
    expect_error(agent.invocation(&resumed), ErrorKind::Unsupported, "resume");
}
