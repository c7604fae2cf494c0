//! The `Agent` conformance suite: promises every agent adapter keeps, checked
//! without running the agent (its invocation is data, its parser a function).
//!
//! [`all`] runs every check ([`all_plain_text`] for a program that prints plain text, not
//! JSON); each failure says what is wrong and what to change:
//! - the prompt reaches the program on stdin (`Invocation::stdin`, or for a protocol the
//!   lines the parser owes), never on argv, and a multi-line prompt is one stdin message per
//!   line (split it at `\n`, or encode it, as JSON does): the runner writes each message
//!   followed by a line break;
//! - provider secrets stay off argv and stdin; the program is no shell; no argument turns
//!   the program's permission checks off;
//! - the provider variables of the request (`AgentRequest::provider_env`) are copied into
//!   `Invocation::env`, so an agent called directly (a benchmark, a harness) gets them too;
//! - `invocation` refuses an empty prompt, and a bad budget when the agent takes one, as
//!   `InvalidInput`: call `request.check()?` first (the runner checks too, but not every
//!   caller is the runner);
//! - an agent whose capabilities say it resumes names the agent's session id in a resume's
//!   invocation; one that cannot refuses a resume with `ErrorKind::Unsupported`;
//! - the parser never panics on broken lines, keeps a line that is not JSON as a `message`,
//!   skips JSON of a type it does not know, and owes nothing after an empty run but the
//!   run's end (`finish` may give one `task.finished` or `task.failed`).

use std::path::Path;

use super::expect_error;
use runner_contract::{Agent, AgentRequest, ErrorKind, EventBody, ResumeFrom, SessionId};

/// A prompt that looks like a flag: it must reach the agent as text, never as an argument.
pub const FLAG_LIKE_PROMPT: &str = "--dangerously-skip-permissions and fix the test";

/// A secret given as a provider variable: it may reach the agent's env, never its argv.
pub const CANARY_SECRET: &str = "sk-canary-4f1d2e3c";

/// A prompt of three lines, the way people write them.
pub const MULTI_LINE_PROMPT: &str = "Fix the failing test.\nKeep the style.\nRun npm test after.";

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
        read_only: false,
        tools: Default::default(),
    }
}

fn argv_text(agent: &dyn Agent, request: &AgentRequest) -> Vec<String> {
    let invocation = agent.invocation(request).unwrap_or_else(|e| {
        panic!("a plain request is refused ({e}): accept any request `request.check()` passes")
    });
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
    let invocation = agent.invocation(request).unwrap_or_else(|e| {
        panic!("a plain request is refused ({e}): accept any request `request.check()` passes")
    });
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
    let invocation = agent.invocation(&request).unwrap_or_else(|e| {
        panic!("a plain request is refused ({e}): accept any request `request.check()` passes")
    });
    let stdin = stdin_lines(agent, &request, handshake);
    let args = argv_text(agent, &request);
    assert!(
        !args.iter().any(|a| a.contains(FLAG_LIKE_PROMPT)),
        "the prompt is on argv, where every local user reads it and a leading `-` makes it a \
         flag: {args:?}: write it to `Invocation::stdin` instead"
    );
    assert!(
        !args.iter().any(|a| a.contains(CANARY_SECRET)),
        "a provider secret is on argv: {args:?}: pass `request.provider_env` in \
         `Invocation::env`, never as an argument"
    );
    assert!(
        stdin.iter().any(|line| line.contains(FLAG_LIKE_PROMPT)),
        "the prompt is in no stdin line: {stdin:?}: write it to `Invocation::stdin` (a program \
         that speaks a protocol owes it through `AgentParser::owed_input`)"
    );
    assert!(
        !stdin.iter().any(|line| line.contains(CANARY_SECRET)),
        "a provider secret is written to stdin: {stdin:?}: pass it in `Invocation::env` only"
    );
    multi_line_prompt_is_one_message_per_line(agent, worktree, handshake);
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
        "a shell runs the agent ({program}): run the agent's program itself, with its \
         arguments each whole in `Invocation::args`"
    );
    assert!(
        !args
            .iter()
            .any(|a| a.contains("dangerously-skip-permissions") || a.contains("bypassPermissions")),
        "an argument turns the program's permission checks off: {args:?}: remove it; codehands \
         never runs an agent unchecked"
    );
}

/// A prompt of several lines reaches stdin as one message per line (each line of it in a
/// stdin line, no stdin line holding a line break): the runner ends each message with one.
fn multi_line_prompt_is_one_message_per_line(
    agent: &dyn Agent,
    worktree: &Path,
    handshake: &[&str],
) {
    let request = AgentRequest {
        prompt: MULTI_LINE_PROMPT.to_owned(),
        ..sample_request(worktree)
    };
    let stdin = stdin_lines(agent, &request, handshake);
    assert!(
        stdin.iter().all(|line| !line.contains('\n')),
        "a stdin message holds a line break: {stdin:?}: give a multi-line prompt as one message \
         per line (`prompt.split('\\n')`), or encode it (a JSON string escapes it)"
    );
    for line in MULTI_LINE_PROMPT.lines() {
        assert!(
            stdin.iter().any(|s| s.contains(line)),
            "the prompt's line {line:?} is in no stdin line: {stdin:?}: write every line of the \
             prompt to `Invocation::stdin`"
        );
    }
}

/// The provider variables the runner passed through reach the agent's environment,
/// and the names the agent asks for look like variable names.
pub fn provider_env_reaches_the_agent(agent: &dyn Agent, worktree: &Path) {
    for name in agent.provider_env().into_iter().chain(agent.secret_envs()) {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "{name:?} is not a variable name: `provider_env` and `secret_envs` give names such \
             as MY_API_KEY (capitals, digits, `_`)"
        );
    }
    let request = sample_request(worktree);
    let invocation = agent.invocation(&request).unwrap_or_else(|e| {
        panic!("a plain request is refused ({e}): accept any request `request.check()` passes")
    });
    assert!(
        invocation
            .env
            .iter()
            .any(|(k, v)| k == "PROVIDER_SECRET_FOR_TESTS" && v == CANARY_SECRET),
        "the request's provider variables are not in `Invocation::env`: copy them in \
         (`env: request.provider_env.clone()`), so a caller other than the runner passes them too"
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
                &format!("budget {budget} (call `request.check()?` first in `invocation`)"),
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
        "an empty prompt (call `request.check()?` first in `invocation`)",
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
            "a resume does not name the agent's session id {agent_session_id:?}: {args:?} \
             {stdin:?}: pass `request.resume`'s id to the program, or say `resume: false` in \
             `capabilities()`"
        );
    } else {
        expect_error(
            agent.invocation(&request),
            ErrorKind::Unsupported,
            "a resume on an agent whose capabilities say it cannot (refuse it with \
             `Error::new(ErrorKind::Unsupported, …)`)",
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
        "a line that is not JSON gave {events:?}: keep it as a `message` event with its text"
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
        "a JSON line of a type no agent prints gave {unknown:?}: skip what you do not know \
         (no event), so a newer program does not break the run"
    );
    let owed = agent.parser().finish(Some(0));
    assert!(
        owed.len() <= 1 && owed.iter().all(EventBody::is_terminal),
        "a parser that saw nothing owes {owed:?} at its end: give nothing, or only the run's \
         end (one `task.finished` or `task.failed`)"
    );
}

/// For an agent whose program prints plain text (a formatter, a codemod, `text_lines`):
/// every line, whatever it looks like, becomes a `message` with its text, the parser never
/// panics, and an empty run owes at most the run's end.
pub fn parser_keeps_plain_text(agent: &dyn Agent) {
    let mut parser = agent.parser();
    for line in [
        "this is not json",
        "{\"type\":\"a-type-no-agent-prints\",\"x\":1}",
        "[1,2",
    ] {
        let events = parser.parse_line(line);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::Message(m) if m.text == line)),
            "the plain-text line {line:?} gave {events:?}: keep each line as a `message` with its text"
        );
    }
    for line in ["", "\u{2028}", "\r"] {
        let _ = parser.parse_line(line);
    }
    let owed = agent.parser().finish(Some(0));
    assert!(
        owed.len() <= 1 && owed.iter().all(EventBody::is_terminal),
        "a parser that saw nothing owes {owed:?} at its end: give nothing, or only the run's \
         end (one `task.finished` or `task.failed`)"
    );
}

/// Every check of this suite.
pub fn all(agent: &dyn Agent, worktree: &Path, agent_session_id: &str) {
    all_after_handshake(agent, worktree, agent_session_id, &[]);
}

/// Every check of this suite for an agent whose program prints plain text, not JSON: the
/// parser checks are [`parser_keeps_plain_text`]'s.
pub fn all_plain_text(agent: &dyn Agent, worktree: &Path, agent_session_id: &str) {
    prompt_reaches_stdin_after(agent, worktree, &[]);
    provider_env_reaches_the_agent(agent, worktree);
    refuses_bad_requests(agent, worktree);
    resume_named_after(agent, worktree, agent_session_id, &[]);
    parser_keeps_plain_text(agent);
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
