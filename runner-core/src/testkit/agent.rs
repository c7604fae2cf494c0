//! The `Agent` conformance suite: promises every agent adapter keeps, checked
//! without running the agent (its invocation is data, its parser a function).

use std::path::Path;

use super::expect_error;
use crate::{Agent, AgentRequest, ErrorKind, EventBody, ResumeFrom, SessionId};

/// A prompt that looks like a flag: it must reach the agent as text, never as an argument.
pub const FLAG_LIKE_PROMPT: &str = "--dangerously-skip-permissions and fix the test";

/// A secret given as a provider variable: it may reach the agent's env, never its argv.
pub const CANARY_SECRET: &str = "sk-canary-4f1d2e3c";

/// A plain request for `worktree`, with a flag-like prompt and a secret provider variable.
pub fn sample_request(worktree: &Path) -> AgentRequest {
    AgentRequest {
        permissions: Default::default(),
        session_id: SessionId::new_random(),
        worktree: worktree.to_path_buf(),
        prompt: FLAG_LIKE_PROMPT.to_owned(),
        model: Some("sonnet".to_owned()),
        budget_usd: 0.5,
        notes: Some("Use two spaces.".to_owned()),
        notes_file: None,
        test_command: Some("npm test".to_owned()),
        resume: None,
        provider_env: vec![(
            "PROVIDER_SECRET_FOR_TESTS".to_owned(),
            CANARY_SECRET.to_owned(),
        )],
    }
}

fn argv_text(agent: &dyn Agent, request: &AgentRequest) -> Vec<String> {
    let invocation = agent
        .invocation(request)
        .expect("a plain request is accepted");
    invocation
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// What reaches the agent's stdin in a run of `request`: its invocation's lines, then the
/// lines its parser owes once it has read `handshake`, the lines a program that speaks a
/// request/response protocol prints before it takes the prompt (none for the others).
pub fn stdin_lines(agent: &dyn Agent, request: &AgentRequest, handshake: &[&str]) -> Vec<String> {
    let invocation = agent
        .invocation(request)
        .expect("a plain request is accepted");
    let mut lines = invocation.stdin;
    let mut parser = agent.parser_for(request);
    lines.extend(parser.owed_input());
    for line in handshake {
        let _ = parser.parse_line(line);
        lines.extend(parser.owed_input());
    }
    lines
}

/// The prompt never appears on argv (not whole, not as part of an argument); it is
/// in a stdin line; no shell is the program; secrets stay off argv.
pub fn prompt_and_secrets_stay_off_argv(agent: &dyn Agent, worktree: &Path) {
    prompt_reaches_stdin_after(agent, worktree, &[]);
}

/// [`prompt_and_secrets_stay_off_argv`] for an agent that takes the prompt after `handshake`.
fn prompt_reaches_stdin_after(agent: &dyn Agent, worktree: &Path, handshake: &[&str]) {
    let request = sample_request(worktree);
    let invocation = agent
        .invocation(&request)
        .expect("a plain request is accepted");
    let stdin = stdin_lines(agent, &request, handshake);
    let args = argv_text(agent, &request);
    assert!(
        !args.iter().any(|a| a.contains(FLAG_LIKE_PROMPT)),
        "the prompt is not on argv: {args:?}"
    );
    assert!(
        !args.iter().any(|a| a.contains(CANARY_SECRET)),
        "a provider secret is not on argv: {args:?}"
    );
    assert!(
        stdin
            .iter()
            .any(|line| line.contains("--dangerously-skip-permissions and fix the test")),
        "the prompt is sent on stdin: {stdin:?}"
    );
    assert!(
        stdin.iter().all(|line| !line.contains('\n')),
        "each stdin message is one line"
    );
    assert!(
        !stdin.iter().any(|line| line.contains(CANARY_SECRET)),
        "a provider secret is not written to stdin: {stdin:?}"
    );
    let program = invocation
        .program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    assert!(
        ![
            "sh",
            "bash",
            "zsh",
            "dash",
            "cmd",
            "cmd.exe",
            "powershell",
            "pwsh"
        ]
        .contains(&program.as_str()),
        "no shell runs the agent: {program}"
    );
    assert!(
        !args
            .iter()
            .any(|a| a.contains("dangerously-skip-permissions") || a.contains("bypassPermissions")),
        "permissions are never bypassed: {args:?}"
    );
}

/// The provider variables the runner passed through reach the agent's environment,
/// and the names the agent asks for look like variable names.
pub fn provider_env_reaches_the_agent(agent: &dyn Agent, worktree: &Path) {
    for name in agent.provider_env() {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "provider_env names are variable names: {name:?}"
        );
    }
    let request = sample_request(worktree);
    let invocation = agent
        .invocation(&request)
        .expect("a plain request is accepted");
    assert!(
        invocation
            .env
            .iter()
            .any(|(k, v)| k == "PROVIDER_SECRET_FOR_TESTS" && v == CANARY_SECRET),
        "the filtered provider variables are in the agent's env"
    );
}

/// A budget that is not a positive number and an empty prompt are refused as `InvalidInput`.
pub fn refuses_bad_requests(agent: &dyn Agent, worktree: &Path) {
    for budget in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let request = AgentRequest {
            permissions: Default::default(),
            budget_usd: budget,
            ..sample_request(worktree)
        };
        if agent.capabilities().budget {
            expect_error(
                agent.invocation(&request),
                ErrorKind::InvalidInput,
                &format!("budget {budget}"),
            );
        }
    }
    let request = AgentRequest {
        permissions: Default::default(),
        prompt: "   ".to_owned(),
        ..sample_request(worktree)
    };
    expect_error(
        agent.invocation(&request),
        ErrorKind::InvalidInput,
        "an empty prompt",
    );
}

/// An agent that says it resumes builds a resume invocation that names the id;
/// one that does not refuses with `Unsupported`.
pub fn resume_matches_capabilities(agent: &dyn Agent, worktree: &Path, agent_session_id: &str) {
    resume_named_after(agent, worktree, agent_session_id, &[]);
}

/// [`resume_matches_capabilities`], the id on argv or on stdin after `handshake`.
fn resume_named_after(
    agent: &dyn Agent,
    worktree: &Path,
    agent_session_id: &str,
    handshake: &[&str],
) {
    let request = AgentRequest {
        permissions: Default::default(),
        resume: Some(ResumeFrom {
            agent_session_id: agent_session_id.to_owned(),
        }),
        prompt: "Carry on.".to_owned(),
        ..sample_request(worktree)
    };
    if agent.capabilities().resume {
        let args = argv_text(agent, &request);
        let stdin = stdin_lines(agent, &request, handshake);
        assert!(
            args.iter()
                .chain(&stdin)
                .any(|a| a.contains(agent_session_id)),
            "a resume names the agent's session id: {args:?} {stdin:?}"
        );
    } else {
        expect_error(
            agent.invocation(&request),
            ErrorKind::Unsupported,
            "resume on an agent that cannot",
        );
    }
}

/// The parser never panics on broken input, turns a line that is not JSON into a
/// `message` with the text, skips unknown JSON, and owes nothing after a clean end.
pub fn parser_survives_broken_lines(agent: &dyn Agent) {
    let mut parser = agent.parser();
    let events = parser.parse_line("this is not json");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, EventBody::Message(m) if m.text.contains("this is not json"))),
        "a line that is not JSON becomes a message with its text: {events:?}"
    );
    for line in [
        "",
        "{",
        "[1,2",
        "null",
        "42",
        "\"text\"",
        "{\"type\":42}",
        "{\"type\":\"a-type-no-agent-prints\",\"x\":1}",
        "{\"type\":null}",
        "\u{2028}",
        "{\"type\":\"result\"}",
    ] {
        // Must not panic; what it yields is the adapter's choice.
        let _ = parser.parse_line(line);
    }
    let unknown = agent
        .parser()
        .parse_line("{\"type\":\"a-type-no-agent-prints\",\"x\":1}");
    assert!(
        unknown.is_empty(),
        "an unknown type is skipped: {unknown:?}"
    );
    assert!(
        agent.parser().finish(Some(0)).is_empty(),
        "a parser that saw nothing owes nothing"
    );
}

/// Every check of this suite.
pub fn all(agent: &dyn Agent, worktree: &Path, agent_session_id: &str) {
    all_after_handshake(agent, worktree, agent_session_id, &[]);
}

/// Every check of this suite, for an agent that speaks a request/response protocol on
/// stdio: its parser owes the program the prompt (and a resume's id) once it has read
/// `handshake`, what the program prints first (an ACP agent's answers to `initialize` and to
/// the opening of its session).
pub fn all_after_handshake(
    agent: &dyn Agent,
    worktree: &Path,
    agent_session_id: &str,
    handshake: &[&str],
) {
    prompt_reaches_stdin_after(agent, worktree, handshake);
    provider_env_reaches_the_agent(agent, worktree);
    refuses_bad_requests(agent, worktree);
    resume_named_after(agent, worktree, agent_session_id, handshake);
    parser_survives_broken_lines(agent);
}
