//! The `Agent` conformance suite: promises every agent adapter keeps, checked
//! without running the agent (its invocation is data, its parser a function).
//!
//! [`all`] runs every check that applies to the agent, chosen from what it declares: its
//! capabilities (`Agent::capabilities`: resume, budget, steer, interrupt, ask_permission,
//! read_only) and its protocol (`Agent::protocol`: a program that speaks ACP owes the prompt
//! after the protocol's handshake, which this suite plays). Each failure says what is wrong
//! and what to change:
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
//! - input while a turn runs matches the capabilities: an agent that steers or is
//!   interrupted gives one line for that input, the same each time, and is invoked as a
//!   conversation (its stdin stays open); one that cannot refuses it as `Unsupported`, as it
//!   does a permission answer when it never asks; a read-only request is taken, and an agent
//!   that says it holds a turn to read-only tools tells its program so;
//! - the parser never panics on broken lines and keeps a line that is not JSON as a
//!   `message`; it either reads JSON (skips JSON of a type it does not know) or keeps plain
//!   text (every line a `message` with its text), as its answer to such a line shows; it owes
//!   nothing after an empty run but the run's end (`finish` may give one `task.finished` or
//!   `task.failed`).

use std::path::Path;

use super::expect_error;
use runner_contract::{
    Agent, AgentInput, AgentRequest, ErrorKind, EventBody, PermissionAnswer, ResumeFrom, SessionId,
    StdinClose,
};

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

/// What an ACP agent answers to `initialize` and to the opening of its session: the lines
/// after which its parser owes the prompt.
pub const ACP_HANDSHAKE: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}"#,
];

/// The lines a program speaking `protocol` prints before it takes the prompt.
pub fn handshake_of(protocol: Option<&str>) -> &'static [&'static str] {
    match protocol {
        None => &[],
        Some("acp") => ACP_HANDSHAKE,
        Some(other) => panic!(
            "the suite knows no handshake of the protocol {other:?}: add its first answers to \
             `runner_testkit::agent::handshake_of`"
        ),
    }
}

/// Every check of this suite that applies to `agent`, chosen from its capabilities and its
/// protocol.
pub fn all(agent: &dyn Agent, worktree: &Path, agent_session_id: &str) {
    let handshake = handshake_of(agent.protocol());
    prompt_reaches_stdin_after(agent, worktree, handshake);
    provider_env_reaches_the_agent(agent, worktree);
    refuses_bad_requests(agent, worktree);
    resume_named_after(agent, worktree, agent_session_id, handshake);
    input_matches_capabilities(agent, worktree);
    read_only_matches_capabilities(agent, worktree);
    parser_reads_json_or_keeps_text(agent);
}

/// Input while a turn runs is taken as the capabilities say: a steer (`steer`) and an
/// interrupt (`interrupt`) each give one line, the same for the same input, and an agent that
/// takes either (or asks permission) is invoked as a conversation; what the agent cannot take
/// is refused as `Unsupported`.
pub fn input_matches_capabilities(agent: &dyn Agent, worktree: &Path) {
    let can = agent.capabilities();
    let steer = AgentInput::User {
        id: "5b0f3c1e-6a2d-4c1b-9e8f-7a6b5c4d3e2f".to_owned(),
        text: "Also keep the tests green".to_owned(),
    };
    let interrupt = AgentInput::Interrupt {
        id: "0c9d8e7f-1a2b-4c3d-8e5f-6a7b8c9d0e1f".to_owned(),
        agent_session_id: Some("sess-1".to_owned()),
    };
    for (input, able, capability) in [
        (&steer, can.steer, "steer"),
        (&interrupt, can.interrupt, "interrupt"),
    ] {
        let line = agent.input_line(input);
        if able {
            let line = line.unwrap_or_else(|e| {
                panic!(
                    "`input_line` refuses {input:?} ({e}) though `capabilities().{capabilities}` \
                     says it takes it: give its stdin line, or say `{capabilities}: false`",
                    capabilities = capability
                )
            });
            assert!(
                !line.contains('\n') && !line.trim().is_empty(),
                "`input_line` for {input:?} gave {line:?}: give one non-empty line (no line \
                 break: the runner ends it with one)"
            );
            assert_eq!(
                agent.input_line(input).ok().as_deref(),
                Some(line.as_str()),
                "`input_line` gave two lines for one input: the runner finds what it delivered \
                 by looking for the line, so the same input must give the same line"
            );
            if let AgentInput::User { text, .. } = input {
                assert!(
                    line.contains(text.as_str()),
                    "the steering line {line:?} does not hold the caller's text {text:?}"
                );
            }
        } else {
            let kind = line.as_ref().err().map(runner_contract::Error::kind);
            assert_eq!(
                kind,
                Some(ErrorKind::Unsupported),
                "`input_line` for {input:?} gave {line:?} though `capabilities().{capability}` is \
                 false: refuse it with `ErrorKind::Unsupported` (the default `input_line` does), \
                 or say `{capability}: true`"
            );
        }
    }
    if !can.ask_permission {
        let answer = AgentInput::Permission {
            request_id: "1".to_owned(),
            input: serde_json::json!({"command": "ls"}),
            answer: PermissionAnswer::Deny {
                message: Some("no".to_owned()),
            },
        };
        let line = agent.input_line(&answer);
        assert_eq!(
            line.as_ref().err().map(runner_contract::Error::kind),
            Some(ErrorKind::Unsupported),
            "`input_line` takes a permission answer ({line:?}) though `capabilities().\
             ask_permission` is false: refuse it with `ErrorKind::Unsupported`, or say \
             `ask_permission: true`"
        );
    }
    if can.steer || can.interrupt || can.ask_permission {
        let request = sample_request(worktree);
        let invocation = agent.invocation(&request).unwrap_or_else(|e| {
            panic!("a plain request is refused ({e}): accept any request `request.check()` passes")
        });
        assert_eq!(
            invocation.close_stdin,
            StdinClose::Conversation,
            "the agent takes input while it runs (steer, interrupt or permission answers), but \
             its stdin closes before: invoke it with `StdinClose::Conversation`, or say it \
             takes no such input in `capabilities()`"
        );
    }
}

/// A read-only request (a workflow's plan or review) is taken; an agent that says it holds
/// such a turn to read-only tools (`read_only`) tells its program, so the invocation differs.
pub fn read_only_matches_capabilities(agent: &dyn Agent, worktree: &Path) {
    let plain = sample_request(worktree);
    let read_only = AgentRequest {
        read_only: true,
        ..sample_request(worktree)
    };
    let shown = |request: &AgentRequest| {
        let invocation = agent.invocation(request).unwrap_or_else(|e| {
            panic!(
                "a request is refused ({e}), read-only: {}: accept it (the runner checks the \
                 worktree after a read-only turn whatever the agent does)",
                request.read_only
            )
        });
        let mut parser = agent.parser_for(request);
        (
            invocation.args,
            invocation.env,
            invocation.stdin,
            parser.owed_input(),
        )
    };
    let plain = shown(&plain);
    let read_only = shown(&read_only);
    if agent.capabilities().read_only {
        assert!(
            plain != read_only,
            "`capabilities().read_only` says the program holds a read-only turn to read-only \
             tools, but a read-only request's invocation is the same as a plain one's: tell the \
             program (a flag, a mode), or say `read_only: false`"
        );
    }
}

/// The parser reads JSON or keeps plain text, and holds to that kind's promises: what it
/// gives for a JSON line of a type no agent prints says which (nothing: JSON; a `message`
/// with the line: plain text; anything else fails).
pub fn parser_reads_json_or_keeps_text(agent: &dyn Agent) {
    let unknown = "{\"type\":\"a-type-no-agent-prints\",\"x\":1}";
    let events = agent.parser().parse_line(unknown);
    let plain_text = matches!(
        events.as_slice(),
        [EventBody::Message(m)] if m.text == unknown
    );
    if plain_text {
        parser_keeps_plain_text(agent);
    } else {
        parser_survives_broken_lines(agent);
    }
}
