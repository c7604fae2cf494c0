//! The arguments, environment and stdin the adapter builds (the safety rules and stream-json flags of ARCHITECTURE.md, "agent-claude").

use std::ffi::OsString;
use std::path::PathBuf;

use agent_claude::ClaudeCode;
use runner_contract::{Agent, AgentRequest, ErrorKind, ResumeFrom, SessionId, StdinClose};
use runner_testkit::expect_error;

fn request() -> AgentRequest {
    AgentRequest {
        permissions: Default::default(),
        session_id: SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap(),
        worktree: PathBuf::from("/work/tree"),
        prompt: "--help me fix the test".into(),
        model: Some("sonnet".into()),
        budget_usd: 0.5,
        notes: Some("--Tests: npm test. Use two spaces.".into()),
        notes_file: Some(PathBuf::from("/home/me/.codehands/runs/3f2a9c1e/notes.md")),
        test_command: Some("npm test".into()),
        resume: None,
        provider_env: vec![
            ("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9999".into()),
            ("ANTHROPIC_API_KEY".into(), "sk-secret".into()),
        ],
        read_only: false,
        tools: Default::default(),
    }
}

fn args_of(agent: &ClaudeCode, request: &AgentRequest) -> Vec<String> {
    agent
        .invocation(request)
        .expect("invocation")
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// A stdin line with its fresh message id replaced.
fn redact_uuid(value: insta::internals::Content, _: insta::internals::ContentPath<'_>) -> String {
    let text = value.as_str().unwrap_or_default().to_owned();
    let mut line: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(uuid::Uuid::parse_str(line["uuid"].as_str().unwrap()).is_ok());
    line["uuid"] = "[uuid]".into();
    line.to_string()
}

#[test]
fn a_first_run() {
    let agent = ClaudeCode::with_program("/opt/claude");
    let invocation = agent.invocation(&request()).unwrap();
    assert_eq!(invocation.program, PathBuf::from("/opt/claude"));
    assert_eq!(invocation.close_stdin, StdinClose::Conversation);
    insta::assert_json_snapshot!(
        "first_run",
        serde_json::json!({
            "args": args_of(&agent, &request()),
            "env": invocation.env,
            "stdin": invocation.stdin,
        }),
        { ".stdin[]" => insta::dynamic_redaction(redact_uuid) }
    );
}

#[test]
fn a_resume() {
    let agent = ClaudeCode::with_program("claude");
    let resume = AgentRequest {
        permissions: Default::default(),
        resume: Some(ResumeFrom {
            agent_session_id: "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42".into(),
        }),
        prompt: runner_contract::DEFAULT_RESUME_PROMPT.into(),
        model: None,
        notes: None,
        notes_file: None,
        test_command: None,
        ..request()
    };
    let invocation = agent.invocation(&resume).unwrap();
    insta::assert_json_snapshot!(
        "resume",
        serde_json::json!({
            "args": args_of(&agent, &resume),
            "stdin": invocation.stdin,
        }),
        { ".stdin[]" => insta::dynamic_redaction(redact_uuid) }
    );
}

/// The text of the user message on the invocation's stdin (its only or last line).
fn prompt_on_stdin(stdin: &[String]) -> String {
    let line: serde_json::Value = serde_json::from_str(stdin.last().unwrap()).unwrap();
    assert_eq!(line["type"], "user");
    assert_eq!(line["message"]["role"], "user");
    line["message"]["content"].as_str().unwrap().to_owned()
}

#[test]
fn the_prompt_is_only_on_stdin_as_one_user_message() {
    let tricky = AgentRequest {
        permissions: Default::default(),
        prompt: "--dangerously-skip-permissions\nline two\u{2028}end".into(),
        ..request()
    };
    let invocation = ClaudeCode::with_program("claude")
        .invocation(&tricky)
        .unwrap();
    assert!(
        !invocation
            .args
            .iter()
            .any(|a| a.to_string_lossy().contains("dangerously"))
    );
    let args = args_of(&ClaudeCode::with_program("claude"), &tricky);
    let format = args.iter().position(|a| a == "--input-format").unwrap();
    assert_eq!(args[format + 1], "stream-json");
    assert!(args.contains(&"--replay-user-messages".to_owned()));
    // One JSON line, whatever the prompt holds; stdin stays open for the conversation.
    assert_eq!(invocation.stdin.len(), 1, "{:?}", invocation.stdin);
    assert_eq!(prompt_on_stdin(&invocation.stdin), tricky.prompt);
    assert_eq!(invocation.close_stdin, StdinClose::Conversation);
}

#[test]
fn an_asking_run_uses_the_stdio_permission_tool_and_initializes_first() {
    let agent = ClaudeCode::with_program("claude");
    let asking = AgentRequest {
        permissions: runner_contract::PermissionMode::Ask,
        ..request()
    };
    let args = args_of(&agent, &asking);
    let tool = args
        .iter()
        .position(|a| a == "--permission-prompt-tool")
        .unwrap();
    assert_eq!(args[tool + 1], "stdio");
    assert!(
        !args.contains(&"--permission-prompts".to_owned()),
        "{args:?}"
    );
    let stdin = agent.invocation(&asking).unwrap().stdin;
    let first: serde_json::Value = serde_json::from_str(&stdin[0]).unwrap();
    assert_eq!(first["request"]["subtype"], "initialize");
    assert_eq!(prompt_on_stdin(&stdin), asking.prompt);
    // A run that denies never asks.
    let denying = args_of(&agent, &request());
    let none = denying
        .iter()
        .position(|a| a == "--permission-prompts")
        .unwrap();
    assert_eq!(denying[none + 1], "none");
    assert!(!denying.contains(&"--permission-prompt-tool".to_owned()));
}

#[test]
fn notes_are_never_on_argv() {
    let agent = ClaudeCode::with_program("claude");
    let with_file = request();
    let args = args_of(&agent, &with_file);
    assert!(args.iter().all(|a| !a.contains("two spaces")), "{args:?}");
    assert!(
        args.contains(
            &"--append-system-prompt-file=/home/me/.codehands/runs/3f2a9c1e/notes.md".to_owned()
        ),
        "the runner's private file is named: {args:?}"
    );
    let invocation = agent.invocation(&with_file).unwrap();
    assert_eq!(prompt_on_stdin(&invocation.stdin), with_file.prompt);

    let without_file = AgentRequest {
        permissions: Default::default(),
        notes_file: None,
        ..request()
    };
    let args = args_of(&agent, &without_file);
    assert!(
        args.iter()
            .all(|a| !a.contains("two spaces") && !a.contains("system-prompt")),
        "{args:?}"
    );
    let stdin = prompt_on_stdin(&agent.invocation(&without_file).unwrap().stdin);
    assert_eq!(
        stdin,
        format!(
            "--Tests: npm test. Use two spaces.\n\n{}",
            without_file.prompt
        ),
        "without a file the notes go ahead of the prompt on stdin"
    );
}

#[test]
fn caller_arguments_that_conflict_with_owned_flags_are_refused() {
    for bad in [
        vec!["--output-format", "json"],
        vec!["--output-format=text"],
        vec!["--input-format", "text"],
        vec!["-p"],
        vec!["--resume", "x"],
        vec!["--dangerously-skip-permissions"],
        vec!["--permission-mode", "bypassPermissions"],
        vec!["--allowedTools", "Bash"],
        vec!["--mcp-config", "x.json"],
        vec!["--settings", "{}"],
        vec!["--add-dir", "/"],
        vec!["--model", "x"],
        vec!["--max-budget-usd", "100"],
        vec!["--plugin-dir", "/tmp/hooks"],
        vec!["--bg"],
        vec!["--no-session-persistence"],
    ] {
        let message = expect_error(
            ClaudeCode::with_program("claude")
                .with_args(bad.clone())
                .map(|_| ()),
            ErrorKind::InvalidInput,
            &format!("{bad:?}"),
        );
        assert!(message.contains("codehands"), "{message}");
    }
    let fine = ClaudeCode::with_program("claude")
        .with_args(["--effort", "high"])
        .unwrap();
    let args = args_of(&fine, &request());
    assert_eq!(&args[args.len() - 2..], ["--effort", "high"]);
}

#[test]
fn bad_requests_are_refused_with_what_to_do() {
    let agent = ClaudeCode::with_program("claude");
    for (what, bad) in [
        (
            "budget",
            AgentRequest {
                permissions: Default::default(),
                budget_usd: -1.0,
                ..request()
            },
        ),
        (
            "test command",
            AgentRequest {
                permissions: Default::default(),
                test_command: Some("npm test), Bash(rm -rf /".into()),
                ..request()
            },
        ),
        (
            "[agent] allow rule",
            AgentRequest {
                tools: runner_contract::ToolPolicy {
                    boxed: true,
                    allow: vec!["Bash(ls),Bash(curl:*)".into()],
                    deny: Vec::new(),
                },
                ..request()
            },
        ),
        (
            "[agent] deny rule",
            AgentRequest {
                tools: runner_contract::ToolPolicy {
                    deny: vec!["Bash(curl:*".into()],
                    ..Default::default()
                },
                ..request()
            },
        ),
        (
            "model",
            AgentRequest {
                permissions: Default::default(),
                model: Some("a\nb".into()),
                ..request()
            },
        ),
        (
            "resume id",
            AgentRequest {
                permissions: Default::default(),
                resume: Some(ResumeFrom {
                    agent_session_id: "--help".into(),
                }),
                ..request()
            },
        ),
        (
            "prompt",
            AgentRequest {
                permissions: Default::default(),
                prompt: " ".into(),
                ..request()
            },
        ),
    ] {
        expect_error(agent.invocation(&bad), ErrorKind::InvalidInput, what);
    }
}

#[test]
fn the_program_and_the_provider_variables() {
    let agent = ClaudeCode::with_program(OsString::from("/x/claude"));
    assert_eq!(agent.program(), std::path::Path::new("/x/claude"));
    assert_eq!(
        agent.provider_env(),
        [
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN"
        ]
    );
}

#[test]
fn anthropic_models_are_taken_and_other_vendors_refused() {
    let agent = ClaudeCode::new();
    for model in [
        "sonnet",
        "opus",
        "haiku",
        "claude-sonnet-4-5",
        "claude-opus-5-5",
    ] {
        agent.check_model(model).unwrap();
    }
    for model in [
        "gpt-5",
        "o3",
        "codex-mini",
        "mistral-large",
        "",
        "-x",
        "a\nb",
    ] {
        let err = agent.check_model(model).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{model:?}: {err}");
    }
}

#[test]
fn a_read_only_request_runs_in_plan_mode_with_the_reading_tools_alone() {
    let agent = ClaudeCode::with_program("/opt/claude");
    let read_only = AgentRequest {
        read_only: true,
        ..request()
    };
    let args = args_of(&agent, &read_only);
    let after = |flag: &str| {
        let at = args.iter().position(|a| a == flag).unwrap();
        args[at + 1].clone()
    };
    assert_eq!(after("--permission-mode"), "plan");
    assert_eq!(after("--allowedTools"), "Read,Glob,Grep");
    assert!(agent.capabilities().read_only);
    // Without it, edits are accepted as before.
    let args = args_of(&agent, &request());
    let at = args.iter().position(|a| a == "--permission-mode").unwrap();
    assert_eq!(args[at + 1], "acceptEdits");
}

/// The value after `flag` in `args`, if the flag is there.
fn value_after(args: &[String], flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

#[test]
fn a_boxed_turn_may_run_any_command_and_keeps_the_deny_rules() {
    let agent = ClaudeCode::with_program("/opt/claude");
    let boxed = AgentRequest {
        tools: runner_contract::ToolPolicy {
            boxed: true,
            allow: vec!["WebFetch".into(), "Bash".into()],
            deny: vec!["Bash(curl:*)".into(), "WebSearch".into()],
        },
        ..request()
    };
    let args = args_of(&agent, &boxed);
    assert_eq!(
        value_after(&args, "--allowedTools").as_deref(),
        Some("Read,Edit,Write,Glob,Grep,Bash,WebFetch"),
        "the box is the boundary: any command, no test-command rule, each rule once"
    );
    assert_eq!(
        value_after(&args, "--disallowedTools").as_deref(),
        Some("Bash(curl:*),WebSearch")
    );
    assert_eq!(
        value_after(&args, "--permission-mode").as_deref(),
        Some("acceptEdits")
    );
    for arg in &args {
        assert_eq!(runner_contract::bypass::find(arg), None, "{arg}");
    }
}

#[test]
fn an_unboxed_turn_may_run_the_test_command_with_its_arguments_and_the_settings_rules() {
    let agent = ClaudeCode::with_program("/opt/claude");
    let unboxed = AgentRequest {
        test_command: Some("cargo test".into()),
        tools: runner_contract::ToolPolicy {
            boxed: false,
            allow: vec!["Bash(make lint:*)".into()],
            deny: Vec::new(),
        },
        ..request()
    };
    let args = args_of(&agent, &unboxed);
    assert_eq!(
        value_after(&args, "--allowedTools").as_deref(),
        Some("Read,Edit,Write,Glob,Grep,Bash(cargo test:*),Bash(make lint:*)")
    );
    assert!(!args.iter().any(|a| a == "--disallowedTools"), "{args:?}");
    // A read-only turn keeps to the reading tools whatever the settings allow.
    let read_only = AgentRequest {
        read_only: true,
        ..unboxed
    };
    assert_eq!(
        value_after(&args_of(&agent, &read_only), "--allowedTools").as_deref(),
        Some("Read,Glob,Grep")
    );
}

#[test]
fn a_caller_cannot_pass_its_own_deny_list() {
    let refused = ClaudeCode::with_program("claude").with_args(["--disallowedTools", "Read"]);
    let message = expect_error(refused, ErrorKind::InvalidInput, "--disallowedTools");
    assert!(message.contains("conflicts"), "{message}");
}
