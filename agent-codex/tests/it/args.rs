//! The arguments, environment and stdin the adapter builds, snapshotted, and the
//! refusals for what it cannot run.

use std::path::Path;

use agent_codex::Codex;
use runner_contract::{
    Agent, AgentRequest, ErrorKind, Invocation, ResumeFrom, SessionId, StdinClose,
};
use runner_testkit::expect_error;

const THREAD: &str = "01a23690-c196-75e3-9541-355fde112d27";

fn request() -> AgentRequest {
    AgentRequest {
        permissions: Default::default(),
        session_id: SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap(),
        worktree: "/work/tree".into(),
        prompt: "Fix the month.\nRun npm test.".into(),
        model: Some("gpt-5.1-codex".into()),
        budget_usd: 0.5,
        notes: None,
        notes_file: None,
        test_command: Some("npm test".into()),
        resume: None,
        provider_env: vec![
            ("OPENAI_BASE_URL".into(), "http://127.0.0.1:4000/v1".into()),
            ("OPENAI_API_KEY".into(), "sk-test".into()),
        ],
        read_only: false,
        tools: Default::default(),
    }
}

fn invocation(request: &AgentRequest) -> Invocation {
    Codex::with_program("/opt/codex/bin/codex")
        .invocation(request)
        .expect("accepted")
}

fn argv(request: &AgentRequest) -> Vec<String> {
    invocation(request)
        .args
        .iter()
        .map(|a| a.to_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_run_against_a_custom_server() {
    let invocation = invocation(&request());
    insta::assert_debug_snapshot!(argv(&request()));
    assert_eq!(invocation.program, Path::new("/opt/codex/bin/codex"));
    assert_eq!(
        invocation.stdin,
        ["Fix the month.", "Run npm test."],
        "the prompt's lines on stdin"
    );
    assert_eq!(
        invocation.close_stdin,
        StdinClose::AfterWrite,
        "Codex reads stdin to its end"
    );
    assert!(
        invocation
            .env
            .iter()
            .any(|(k, v)| k == "OPENAI_API_KEY" && v == "sk-test")
    );
}

#[test]
fn without_a_base_url_codex_keeps_its_own_provider() {
    let request = AgentRequest {
        permissions: Default::default(),
        provider_env: vec![],
        model: None,
        ..request()
    };
    let args = argv(&request);
    insta::assert_debug_snapshot!(args);
    assert!(
        !args.iter().any(|a| a.contains("model_provider")),
        "{args:?}"
    );
}

#[test]
fn a_resume_names_the_thread_after_the_flags() {
    let request = AgentRequest {
        permissions: Default::default(),
        resume: Some(ResumeFrom {
            agent_session_id: THREAD.into(),
        }),
        prompt: runner_contract::DEFAULT_RESUME_PROMPT.into(),
        ..request()
    };
    let invocation = invocation(&request);
    let args: Vec<&str> = invocation
        .args
        .iter()
        .map(|a| a.to_str().unwrap())
        .collect();
    insta::assert_debug_snapshot!(args);
    assert_eq!(&args[..2], ["exec", "resume"]);
    assert_eq!(&args[args.len() - 3..], ["--", THREAD, "-"]);
    assert!(
        !args.contains(&"--sandbox"),
        "`exec resume` has no --sandbox: the config key says it"
    );
    assert_eq!(invocation.stdin, [runner_contract::DEFAULT_RESUME_PROMPT]);
    let blank = AgentRequest {
        permissions: Default::default(),
        prompt: String::new(),
        ..request
    };
    assert!(
        Codex::with_program("codex").invocation(&blank).is_err(),
        "a blank prompt is refused on resume too: the runner fills in the default"
    );
}

#[test]
fn caller_text_stays_inside_its_toml_string() {
    let request = AgentRequest {
        permissions: Default::default(),
        notes: Some("Two spaces.\"\nmodel_provider = \"evil\"\n".into()),
        notes_file: None,
        model: Some("m\" sandbox_mode=\"danger-full-access".into()),
        provider_env: vec![("OPENAI_BASE_URL".into(), "http://h/v1\"x".into())],
        ..request()
    };
    let args = argv(&request);
    assert!(
        args.iter().all(|a| !a.contains("Two spaces")),
        "notes hold earlier prompts: never on argv, which every local user can read: {args:?}"
    );
    let stdin = invocation(&request).stdin.join("\n");
    assert!(
        stdin.starts_with("Two spaces.\"\nmodel_provider = \"evil\"")
            && stdin.ends_with(&request.prompt),
        "the notes go ahead of the prompt on stdin: {stdin:?}"
    );
    let model = args.iter().find(|a| a.starts_with("--model=")).unwrap();
    assert_eq!(
        model, r#"--model=m" sandbox_mode="danger-full-access"#,
        "one argument, never a config key"
    );
    let url = args.iter().find(|a| a.contains("base_url=")).unwrap();
    assert_eq!(
        url,
        r#"model_providers.codehands.base_url="http://h/v1\"x""#
    );
    assert_eq!(
        args.iter()
            .filter(|a| a.starts_with("sandbox_mode="))
            .count(),
        1
    );
}

#[test]
fn refuses_what_it_cannot_run() {
    for (what, request) in [
        (
            "an empty prompt",
            AgentRequest {
                permissions: Default::default(),
                prompt: " \n ".into(),
                ..request()
            },
        ),
        (
            "a budget of zero",
            AgentRequest {
                permissions: Default::default(),
                budget_usd: 0.0,
                ..request()
            },
        ),
        (
            "a model with a newline",
            AgentRequest {
                permissions: Default::default(),
                model: Some("a\nb".into()),
                ..request()
            },
        ),
        (
            "a base URL that is not http",
            AgentRequest {
                permissions: Default::default(),
                provider_env: vec![("OPENAI_BASE_URL".into(), "file:///etc/passwd".into())],
                ..request()
            },
        ),
        (
            "a thread id that is a flag",
            AgentRequest {
                permissions: Default::default(),
                resume: Some(ResumeFrom {
                    agent_session_id: "--last".into(),
                }),
                ..request()
            },
        ),
    ] {
        let message = expect_error(
            Codex::with_program("codex").invocation(&request),
            ErrorKind::InvalidInput,
            what,
        );
        assert!(
            message.len() > 30,
            "{what}: the message says what to do: {message}"
        );
    }
}

#[test]
fn never_bypasses_the_sandbox_or_approvals() {
    for request in [
        request(),
        AgentRequest {
            permissions: Default::default(),
            resume: Some(ResumeFrom {
                agent_session_id: THREAD.into(),
            }),
            ..request()
        },
    ] {
        let args = argv(&request);
        assert!(
            !args
                .iter()
                .any(|a| a.contains("dangerously") || a.contains("danger-full-access")),
            "{args:?}"
        );
        assert!(args.contains(&r#"sandbox_mode="workspace-write""#.to_owned()));
        assert!(args.contains(&r#"approval_policy="never""#.to_owned()));
    }
}

#[test]
fn its_providers_models_are_taken_and_other_vendors_refused() {
    let agent = Codex::new();
    for model in ["gpt-5.1-codex", "o3", "scripted-model", "llama3"] {
        agent.check_model(model).unwrap();
    }
    for model in ["claude-sonnet-4-5", "sonnet", "Opus", "", "--model", "a\nb"] {
        let err = agent.check_model(model).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{model:?}: {err}");
    }
}

#[test]
fn a_read_only_request_runs_in_codexs_read_only_sandbox() {
    let read_only = AgentRequest {
        read_only: true,
        ..request()
    };
    let args = argv(&read_only);
    let at = args.iter().position(|a| a == "--sandbox").unwrap();
    assert_eq!(args[at + 1], "read-only");
    assert!(
        args.iter().any(|a| a == "sandbox_mode=\"read-only\""),
        "{args:?}"
    );
    assert!(
        !args.iter().any(|a| a.contains("workspace-write")),
        "{args:?}"
    );
    // A resume has no `--sandbox`: the config key says it.
    let resumed = AgentRequest {
        resume: Some(ResumeFrom {
            agent_session_id: THREAD.into(),
        }),
        ..read_only
    };
    let args = argv(&resumed);
    assert!(
        args.iter().any(|a| a == "sandbox_mode=\"read-only\""),
        "{args:?}"
    );
    assert!(
        Codex::with_program("/opt/codex/bin/codex")
            .capabilities()
            .read_only
    );
}
