//! The recording scenarios of mini-swe-agent: a repo, a prompt and a model script each,
//! run with the `agent-harness` library. Used by `record.rs` (`cargo xtask record
//! mini-swe-agent <scenario>`) and by the tests that run the real program, so a fixture can
//! always be made again from the same definition.

#![allow(dead_code)] // each test target uses part of it

use std::path::{Path, PathBuf};

use agent_harness::files::{BASE_FILES, NPM_FAILING};
use agent_harness::{Fixtures, Recorder, Scenario};
use agent_mini_swe::{MiniSweAgent, install};
use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::Agent;
use serde_json::json;

/// The variable naming an install folder to test instead of the cached one.
pub const DIR_VAR: &str = "MINI_SWE_AGENT_DIR";

/// The key the recordings use; the server accepts any.
pub const DUMMY_KEY: &str = "sk-dummy-for-recordings";

/// The mini-swe-agent under test: the install folder named by `MINI_SWE_AGENT_DIR`,
/// else the one `cargo xtask agents` put in the cache, if it is there.
pub fn installed() -> Option<MiniSweAgent> {
    let folder = std::env::var_os(DIR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| install::folder(&runner_testkit::agents::cache_root()));
    install::program(&folder)
        .is_file()
        .then(|| MiniSweAgent::from_install(&folder))
}

/// The provider variables that send mini (through litellm) to the scripted server (OpenAI
/// Chat Completions).
pub fn provider_env(server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), server.openai_base_url()),
        ("OPENAI_API_KEY".into(), DUMMY_KEY.into()),
    ]
}

/// What `record.rs` checks and records.
pub fn recorder() -> Recorder {
    Recorder {
        program: format!("mini-swe-agent {}", install::VERSION),
        record_name: "mini-swe-agent",
        fixtures: Fixtures::of(env!("CARGO_MANIFEST_DIR")),
        scenarios: all(),
        agent: || {
            let agent = installed().ok_or(format!(
                "mini-swe-agent is not installed: run `cargo xtask agents` first, or set {DIR_VAR} to an install folder"
            ))?;
            Ok(Box::new(agent) as Box<dyn Agent>)
        },
        provider_env,
    }
}

/// The edit that fixes the month, as mini's prompt teaches (`sed -i`).
pub const FIX_MONTH: &str = "sed -i 's/getMonth()}/getMonth() + 1}/' src/date.js";

/// The command that ends a run, as mini's prompt asks for it.
pub const SUBMIT: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// A call of mini's one tool, `bash`.
pub fn bash(id: &str, command: &str) -> Block {
    Block::tool_use(id, "bash", json!({ "command": command }))
}

/// A turn of some text and one command.
fn say_and_run(text: &str, id: &str, command: &str) -> Turn {
    Turn::blocks([Block::text(text), bash(id, command)])
}

/// mini's retries of a failing model call, cut to two tries so error runs stay short.
const TWO_TRIES: &[(&str, &str)] = &[("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "2")];

fn scenario(name: &'static str, about: &'static str, script: fn(&Path) -> Script) -> Scenario {
    Scenario {
        name,
        about,
        prompt: "Fix the month in src/date.js. Run the tests to check.",
        files: BASE_FILES,
        test_command: Some("npm test"),
        // `openai/` sends it to OPENAI_BASE_URL; litellm has no price for this name.
        model: Some("openai/scripted-model"),
        notes: None,
        budget_usd: 0.5,
        needs_npm: false,
        extra_env: &[],
        answers: &[],
        script,
    }
}

/// Every scenario, in the order of the fixtures README.
pub fn all() -> Vec<Scenario> {
    vec![
        scenario(
            "fix-and-submit",
            "reads the file, fixes the month with sed, checks, submits",
            |_| {
                Script::new([
                    say_and_run("Let me look at the file.", "call_r1", "cat src/date.js"),
                    say_and_run("getMonth() starts at 0; fixing.", "call_r2", FIX_MONTH),
                    say_and_run("Checking the change.", "call_r3", "git diff --stat"),
                    say_and_run("The month is fixed.", "call_r4", SUBMIT),
                ])
            },
        ),
        scenario(
            "two-commands-in-one-turn",
            "one answer with two tool calls, one of them failing",
            |_| {
                Script::new([
                    Turn::blocks([
                        Block::text("Two looks at once."),
                        bash("call_p1", "ls src"),
                        bash("call_p2", "ls src/missing.js"),
                    ]),
                    say_and_run("Only date.js is there.", "call_p3", SUBMIT),
                ])
            },
        ),
        Scenario {
            files: NPM_FAILING,
            needs_npm: true,
            ..scenario("failing-test", "`npm test` fails with exit code 1", |_| {
                Script::new([
                    say_and_run("Running the tests.", "call_t1", "npm test"),
                    say_and_run("One test fails.", "call_t2", SUBMIT),
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
                        say_and_run(
                            "Running the tests.",
                            "call_t3",
                            "npm test 2>&1 | tail -n 20",
                        ),
                        say_and_run("Looks done.", "call_t4", SUBMIT),
                    ])
                },
            )
        },
        scenario(
            "no-command",
            "the model only talks: three format errors end the run",
            |_| Script::new([Turn::text("I would change getMonth() to getMonth() + 1.")]),
        ),
        scenario("error-401", "the API refuses the key", |_| {
            Script::new([HttpError {
                message: "Incorrect API key provided.".into(),
                ..HttpError::status(401)
            }
            .into()])
        }),
        Scenario {
            extra_env: TWO_TRIES,
            ..scenario("error-429", "rate limited on every try", |_| {
                Script::new([HttpError::status(429).header("retry-after", "0").into()])
            })
        },
        Scenario {
            extra_env: TWO_TRIES,
            ..scenario(
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
            )
        },
        Scenario {
            extra_env: TWO_TRIES,
            ..scenario("error-500", "the server fails on every try", |_| {
                Script::new([HttpError::status(500).header("retry-after", "0").into()])
            })
        },
        scenario("retry-then-success", "one 429, then an answer", |_| {
            Script::new([
                HttpError::status(429)
                    .header("retry-after", "0")
                    .times(1)
                    .into(),
                say_and_run("Answered after one retry.", "call_y1", SUBMIT),
            ])
        }),
        Scenario {
            notes: Some("Use two spaces for indentation."),
            ..scenario("notes", "repo notes reach the model in the task", |_| {
                Script::new([say_and_run("Noted.", "call_n1", SUBMIT)])
            })
        },
        Scenario {
            prompt: "--task=\"evil\" -c agent.mode=human\nFix {{ 7*7 }} and {% raw %}these{% endraw %}: é \u{2028} 😀 \u{7f} \"quoted\" \\ back",
            ..scenario(
                "prompt-as-text",
                "a prompt of flags, template syntax and odd characters arrives as text",
                |_| Script::new([say_and_run("Read as text.", "call_u1", SUBMIT)]),
            )
        },
        Scenario {
            // A name litellm can price, so mini counts a cost and stops at its limit.
            model: Some("openai/gpt-4o-mini"),
            budget_usd: 0.000_01,
            ..scenario(
                "budget-exhausted",
                "a priced model passes the cost limit after one call",
                |_| {
                    Script::new([
                        say_and_run("Looking.", "call_b1", "cat src/date.js"),
                        say_and_run("Done.", "call_b2", SUBMIT),
                    ])
                },
            )
        },
    ]
}

/// The scenario of that name.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}
