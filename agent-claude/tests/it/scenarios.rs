//! The recording scenarios of Claude Code: a repo, a prompt and a model script each, run
//! with the `agent-harness` library. Used by `record.rs` (`cargo xtask record claude
//! <scenario>`) and by the tests that run the real binary, so a fixture can always be made
//! again from the same definition.

#![allow(dead_code)] // each test target uses part of it

use std::path::{Path, PathBuf};

use agent_claude::ClaudeCode;
use agent_harness::files::{BASE_FILES, NPM_FAILING, NPM_PASSING};
use agent_harness::{Fixtures, Recorder, Scenario};
use model_server::{Block, HttpError, ModelServer, Reply, Script, Turn, Usage};
use runner_contract::Agent;
use serde_json::json;

/// The key the recordings use; the server accepts any.
pub const DUMMY_KEY: &str = "sk-ant-dummy-for-recordings";

/// The Claude Code under test: `CLAUDE_BIN`, else the pinned one `cargo xtask agents` fetched.
pub fn installed() -> Option<PathBuf> {
    runner_testkit::agents::find_pinned("CLAUDE_BIN", agent_claude::pinned::path_in)
}

/// The provider variables that send Claude Code to the scripted server.
pub fn provider_env(server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("ANTHROPIC_BASE_URL".into(), server.base_url()),
        ("ANTHROPIC_API_KEY".into(), DUMMY_KEY.into()),
    ]
}

/// What `record.rs` checks and records.
pub fn recorder() -> Recorder {
    Recorder {
        program: format!("Claude Code {}", agent_claude::pinned::VERSION),
        record_name: "claude",
        fixtures: Fixtures::of(env!("CARGO_MANIFEST_DIR")),
        scenarios: all(),
        agent: || {
            let claude = installed().ok_or(
                "Claude Code is not installed: run `cargo xtask agents` first, or set CLAUDE_BIN",
            )?;
            Ok(Box::new(ClaudeCode::with_program(claude)) as Box<dyn Agent>)
        },
        provider_env,
    }
}

/// Retries Claude Code makes on an API error: one, so error runs stay short.
const ONE_RETRY: &[(&str, &str)] = &[("CLAUDE_CODE_MAX_RETRIES", "1")];

fn path(repo: &Path, file: &str) -> String {
    repo.join(file).display().to_string()
}

fn tool(id: &str, name: &str, input: serde_json::Value) -> Block {
    Block::tool_use(id, name, input)
}

fn bash(id: &str, command: &str) -> Turn {
    Turn::blocks([tool(
        id,
        "Bash",
        json!({ "command": command, "description": "Run the tests" }),
    )])
}

fn scenario(name: &'static str, about: &'static str, script: fn(&Path) -> Script) -> Scenario {
    Scenario {
        name,
        about,
        prompt: "Fix the month in src/date.js. Run the tests to check.",
        files: BASE_FILES,
        test_command: Some("npm test"),
        model: None,
        notes: None,
        budget_usd: 0.5,
        extra_env: ONE_RETRY,
        answers: &[],
        needs_npm: false,
        script,
    }
}

/// Every scenario, in the order of the fixtures README.
pub fn all() -> Vec<Scenario> {
    vec![
        scenario(
            "edit-files",
            "Read, then Edit and Write in one turn, then MultiEdit (not a tool of 2.1.332)",
            |repo| {
                let date = path(repo, "src/date.js");
                Script::new([
                    Turn::blocks([
                        Block::text("I'll read the file first."),
                        tool("toolu_01read", "Read", json!({ "file_path": date })),
                    ]),
                    Turn::blocks([
                        tool(
                            "toolu_02edit",
                            "Edit",
                            json!({
                                "file_path": date,
                                "old_string": "${date.getMonth()}",
                                "new_string": "${date.getMonth() + 1}",
                            }),
                        ),
                        tool(
                            "toolu_03write",
                            "Write",
                            json!({
                                "file_path": path(repo, "src/hello.js"),
                                "content": "export const hello = () => 'hello';\n",
                            }),
                        ),
                    ]),
                    Turn::blocks([tool(
                        "toolu_04multi",
                        "MultiEdit",
                        json!({
                            "file_path": date,
                            "edits": [{ "old_string": "date", "new_string": "day" }],
                        }),
                    )]),
                    Turn::text("Fixed the month and added src/hello.js."),
                ])
            },
        ),
        scenario("read-files", "Read, Glob and Grep in one turn", |repo| {
            Script::new([
                Turn::blocks([
                    tool(
                        "toolu_11read",
                        "Read",
                        json!({ "file_path": path(repo, "README.md") }),
                    ),
                    tool("toolu_12glob", "Glob", json!({ "pattern": "**/*.js" })),
                    tool(
                        "toolu_13grep",
                        "Grep",
                        json!({ "pattern": "getMonth", "output_mode": "content" }),
                    ),
                ]),
                Turn::text("The month comes from getMonth() in src/date.js."),
            ])
        }),
        Scenario {
            files: NPM_PASSING,
            needs_npm: true,
            ..scenario("npm-test-passing", "`npm test` passes", |_| {
                Script::new([
                    bash("toolu_21bash", "npm test"),
                    Turn::text("The tests pass."),
                ])
            })
        },
        Scenario {
            files: NPM_FAILING,
            needs_npm: true,
            ..scenario(
                "npm-test-failing",
                "`npm test` fails with exit code 1",
                |_| {
                    Script::new([
                        bash("toolu_31bash", "npm test"),
                        Turn::text("One test fails."),
                    ])
                },
            )
        },
        Scenario {
            files: NPM_FAILING,
            needs_npm: true,
            ..scenario(
                "npm-test-failing-exit-0",
                "`npm test | tail` fails while the pipe exits 0",
                |_| {
                    Script::new([
                        bash("toolu_41bash", "npm test | tail -n 20"),
                        Turn::text("Looks done."),
                    ])
                },
            )
        },
        scenario(
            "refused-command",
            "a Bash command outside the allow list is refused",
            |_| {
                Script::new([
                    Turn::blocks([tool(
                        "toolu_51bash",
                        "Bash",
                        json!({
                            "command": "curl -s http://127.0.0.1:9/",
                            "description": "Fetch a page",
                        }),
                    )]),
                    Turn::text("I was not allowed to run curl."),
                ])
            },
        ),
        scenario("tool-error", "Read of a file that does not exist", |repo| {
            Script::new([
                Turn::blocks([tool(
                    "toolu_61read",
                    "Read",
                    json!({ "file_path": path(repo, "src/missing.js") }),
                )]),
                Turn::text("That file does not exist."),
            ])
        }),
        scenario(
            "several-blocks",
            "thinking, text and two tool uses in one reply",
            |repo| {
                Script::new([
                    Turn::blocks([
                        Block::Thinking("The bug is in the month.".into()),
                        Block::text("Let me look at both files."),
                        tool(
                            "toolu_71read",
                            "Read",
                            json!({ "file_path": path(repo, "src/date.js") }),
                        ),
                        tool(
                            "toolu_72read",
                            "Read",
                            json!({ "file_path": path(repo, "README.md") }),
                        ),
                    ]),
                    Turn::blocks([Block::text("Both read."), Block::text("Done.")]),
                ])
            },
        ),
        scenario(
            "tool-results-out-of-order",
            "Read, Grep and Glob in one turn: the results come back in another order",
            |repo| {
                Script::new([
                    Turn::blocks([
                        tool(
                            "toolu_81read",
                            "Read",
                            json!({ "file_path": path(repo, "src/date.js") }),
                        ),
                        tool(
                            "toolu_82grep",
                            "Grep",
                            json!({ "pattern": "fixture", "output_mode": "files_with_matches" }),
                        ),
                        tool("toolu_83glob", "Glob", json!({ "pattern": "*.md" })),
                    ]),
                    Turn::text("Done."),
                ])
            },
        ),
        scenario("error-401", "the API refuses the key", |_| {
            Script::new([HttpError::status(401).into()])
        }),
        scenario("error-429", "rate limited on every try", |_| {
            Script::new([HttpError::status(429).header("retry-after", "1").into()])
        }),
        scenario("error-529", "overloaded on every try", |_| {
            Script::new([HttpError::status(529).into()])
        }),
        scenario("error-403", "the key may not use the model", |_| {
            Script::new([HttpError::status(403).into()])
        }),
        scenario("error-500", "a server error on every try", |_| {
            Script::new([HttpError::status(500).into()])
        }),
        scenario(
            "error-credit",
            "a 400 saying the credit balance is too low",
            |_| {
                let mut error = HttpError::status(400);
                error.message = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.".into();
                Script::new([error.into()])
            },
        ),
        scenario(
            "retry-then-success",
            "one 429, then the model answers",
            |_| {
                Script::new([
                    HttpError::status(429)
                        .header("retry-after", "1")
                        .times(1)
                        .into(),
                    Turn::text("Answered after one retry."),
                ])
            },
        ),
        Scenario {
            budget_usd: 0.01,
            ..scenario(
                "budget-exhausted",
                "the first reply costs more than the budget",
                |repo| {
                    let expensive = Usage {
                        input_tokens: 200_000,
                        output_tokens: 2_000,
                    };
                    Script::new([
                        Turn::Reply(Reply {
                            blocks: vec![tool(
                                "toolu_91read",
                                "Read",
                                json!({ "file_path": path(repo, "src/date.js") }),
                            )],
                            usage: expensive,
                            delay: None,
                        }),
                        Turn::Reply(Reply {
                            blocks: vec![tool(
                                "toolu_92read",
                                "Read",
                                json!({ "file_path": path(repo, "README.md") }),
                            )],
                            usage: expensive,
                            delay: None,
                        }),
                        Turn::text("Done."),
                    ])
                },
            )
        },
    ]
}

/// The scenario of this name.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}
