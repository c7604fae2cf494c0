//! The recording scenarios of Codex: a repo, a prompt and a model script each, run with
//! the `agent-harness` library. Used by `record.rs` (`cargo xtask record codex
//! <scenario>`) and by the tests that run the real binary, so a fixture can always be made
//! again from the same definition.

#![allow(dead_code)] // each test target uses part of it

use std::path::{Path, PathBuf};

use agent_codex::Codex;
use agent_harness::files::{BASE_FILES, NPM_FAILING};
use agent_harness::{Fixtures, Recorder, Scenario};
use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::Agent;
use serde_json::json;

/// The key the recordings use; the server accepts any.
pub const DUMMY_KEY: &str = "sk-dummy-for-recordings";

/// The Codex under test: `CODEX_BIN`, else the pinned one `cargo xtask agents` fetched.
pub fn installed() -> Option<PathBuf> {
    runner_testkit::agents::find_pinned("CODEX_BIN", agent_codex::pinned::path_in)
}

/// The provider variables that send Codex to the scripted server (OpenAI Responses).
pub fn provider_env(server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), server.openai_base_url()),
        ("OPENAI_API_KEY".into(), DUMMY_KEY.into()),
    ]
}

/// What `record.rs` checks and records.
pub fn recorder() -> Recorder {
    Recorder {
        program: format!("Codex {}", agent_codex::pinned::VERSION),
        record_name: "codex",
        fixtures: Fixtures::of(env!("CARGO_MANIFEST_DIR")),
        scenarios: all(),
        agent: || {
            let codex = installed().ok_or(
                "Codex is not installed: run `cargo xtask agents` first, or set CODEX_BIN",
            )?;
            Ok(Box::new(Codex::with_program(codex)) as Box<dyn Agent>)
        },
        provider_env,
    }
}

/// The patch that fixes the month and adds a file, in Codex's apply_patch format.
const FIX_PATCH: &str = "*** Begin Patch\n*** Update File: src/date.js\n@@\n-  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;\n+  return `${date.getFullYear()}-${date.getMonth() + 1}-${date.getDate()}`;\n*** Add File: src/hello.js\n+export const hello = () => 'hello';\n*** End Patch\n";

/// A command through Codex's `exec_command` tool.
fn exec(id: &str, cmd: &str) -> Block {
    Block::tool_use(id, "exec_command", json!({ "cmd": cmd }))
}

/// A patch the way Codex edits files when it offers no `apply_patch` tool (as with
/// an unknown model): `apply_patch` with a heredoc through `exec_command`, which
/// Codex intercepts and applies itself (a `file_change` item, not a command).
fn patch(id: &str, text: &str) -> Block {
    exec(id, &format!("apply_patch <<'PATCH'\n{text}PATCH\n"))
}

fn scenario(name: &'static str, about: &'static str, script: fn(&Path) -> Script) -> Scenario {
    Scenario {
        name,
        about,
        prompt: "Fix the month in src/date.js. Run the tests to check.",
        files: BASE_FILES,
        test_command: Some("npm test"),
        // A name Codex has no metadata for: it then offers plain tools (`exec_command`,
        // `apply_patch`) instead of its JavaScript code mode, and says so in a warning.
        model: Some("scripted-model"),
        notes: None,
        budget_usd: 0.5,
        extra_env: &[],
        answers: &[],
        needs_npm: false,
        script,
    }
}

/// Every scenario, in the order of the fixtures README.
pub fn all() -> Vec<Scenario> {
    vec![
        scenario(
            "write-file",
            "apply_patch updates one file and adds another",
            |_| {
                Script::new([
                    Turn::blocks([
                        Block::text("I'll fix the month."),
                        patch("call_w1", FIX_PATCH),
                    ]),
                    Turn::text("Fixed the month and added src/hello.js."),
                ])
            },
        ),
        scenario("run-command", "exec_command runs `cat src/date.js`", |_| {
            Script::new([
                Turn::blocks([exec("call_c1", "cat src/date.js")]),
                Turn::text("The month comes from getMonth()."),
            ])
        }),
        Scenario {
            files: NPM_FAILING,
            needs_npm: true,
            ..scenario("failing-test", "`npm test` fails with exit code 1", |_| {
                Script::new([
                    Turn::blocks([exec("call_t1", "npm test")]),
                    Turn::text("One test fails."),
                ])
            })
        },
        Scenario {
            files: NPM_FAILING,
            needs_npm: true,
            ..scenario(
                "failing-test-exit-0",
                "`npm test | tail` fails while the pipe exits 0",
                |_| {
                    Script::new([
                        Turn::blocks([exec("call_t2", "npm test 2>&1 | tail -n 20")]),
                        Turn::text("Looks done."),
                    ])
                },
            )
        },
        scenario(
            "failing-command",
            "a command that fails, and one the sandbox refuses (writing outside the repo)",
            |_| {
                Script::new([
                    Turn::blocks([exec("call_f1", "ls src/missing.js")]),
                    Turn::blocks([exec("call_f2", "touch /etc/codehands-probe")]),
                    Turn::text("Neither command worked."),
                ])
            },
        ),
        scenario(
            "several-turns",
            "reasoning, a command, a patch, then a test run across four model turns",
            |_| {
                Script::new([
                    Turn::blocks([
                        Block::Thinking("The bug is in the month.".into()),
                        Block::text("Let me look."),
                        exec("call_s1", "cat src/date.js"),
                    ]),
                    Turn::blocks([patch("call_s2", FIX_PATCH)]),
                    Turn::blocks([exec("call_s3", "git status --short")]),
                    Turn::text("Done: the month is fixed."),
                ])
            },
        ),
        scenario("error-401", "the API refuses the key", |_| {
            Script::new([HttpError {
                message: "Incorrect API key provided.".into(),
                ..HttpError::status(401)
            }
            .into()])
        }),
        scenario("error-429", "rate limited on every try", |_| {
            Script::new([HttpError::status(429).header("retry-after", "1").into()])
        }),
        scenario(
            "error-quota",
            "429 with code insufficient_quota: out of credit",
            |_| {
                Script::new([HttpError {
                    error_type: "insufficient_quota".into(),
                    message: "You exceeded your current quota, please check your plan and billing details.".into(),
                    ..HttpError::status(429)
                }
                .into()])
            },
        ),
        scenario("error-500", "the server fails on every try", |_| {
            Script::new([HttpError::status(500).into()])
        }),
        Scenario {
            notes: Some("Use two spaces for indentation."),
            ..scenario(
                "notes",
                "repo notes reach the model ahead of the prompt",
                |_| Script::new([Turn::text("Noted.")]),
            )
        },
        scenario("retry-then-success", "one 429, then an answer", |_| {
            Script::new([
                HttpError::status(429)
                    .header("retry-after", "0")
                    .times(1)
                    .into(),
                Turn::text("Answered after one retry."),
            ])
        }),
    ]
}

/// The scenario of that name.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}
