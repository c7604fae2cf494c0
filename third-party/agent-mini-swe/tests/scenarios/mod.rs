//! The recording scenarios: a repo, a prompt and a model script each. Shared by
//! `cargo xtask record mini-swe-agent <scenario>` and the tests that run the real
//! program, so a fixture can always be made again from the same definition.

#![allow(dead_code)] // each includer uses part of it

pub mod run;

use std::path::{Path, PathBuf};

use agent_mini_swe::{MiniSweAgent, install};
use runner_fake::model_server::{Block, HttpError, Script, Turn};
use serde_json::json;

/// The variable naming an install folder to test instead of the cached one.
pub const DIR_VAR: &str = "MINI_SWE_AGENT_DIR";

/// The mini-swe-agent under test: the install folder named by `MINI_SWE_AGENT_DIR`,
/// else the one `cargo xtask agents` put in the cache, if it is there.
pub fn installed() -> Option<MiniSweAgent> {
    let folder = std::env::var_os(DIR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| install::folder(&runner_core::testkit::agents::cache_root()));
    install::program(&folder)
        .is_file()
        .then(|| MiniSweAgent::from_install(&folder))
}

/// One scenario.
pub struct Scenario {
    /// The fixture's name: `tests/fixtures/<name>.jsonl`.
    pub name: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// The prompt, sent on stdin inside the run's config.
    pub prompt: &'static str,
    /// Files of the repo's first commit.
    pub files: &'static [(&'static str, &'static str)],
    /// The model, in litellm's naming.
    pub model: &'static str,
    /// Repo notes (they go into the task).
    pub notes: Option<&'static str>,
    /// The budget in US dollars (mini's cost limit).
    pub budget_usd: f64,
    /// Whether it needs `npm` on PATH.
    pub needs_npm: bool,
    /// Variables for this scenario only (mini's retry count, to keep error runs short).
    pub extra_env: &'static [(&'static str, &'static str)],
    /// The model's script, given the repo's absolute path.
    pub script: fn(&Path) -> Script,
}

const DATE_JS: &str = "export function formatDate(date) {\n  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;\n}\n";

const PACKAGE_JSON: &str = "{\n  \"name\": \"fixture\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node --test\" }\n}\n";

const FAILING_TEST: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => assert.strictEqual(1 + 1, 2));\ntest('months start at one', () => assert.strictEqual(new Date(2026, 0, 5).getMonth(), 1));\n";

const BASE_FILES: &[(&str, &str)] = &[
    ("src/date.js", DATE_JS),
    ("README.md", "# fixture\n\nA small repo for recordings.\n"),
];

const NPM_FAILING: &[(&str, &str)] = &[
    ("src/date.js", DATE_JS),
    ("package.json", PACKAGE_JSON),
    ("test/date.test.js", FAILING_TEST),
];

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
        // `openai/` sends it to OPENAI_BASE_URL; litellm has no price for this name.
        model: "openai/scripted-model",
        notes: None,
        budget_usd: 0.5,
        needs_npm: false,
        extra_env: &[],
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
            model: "openai/gpt-4o-mini",
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
