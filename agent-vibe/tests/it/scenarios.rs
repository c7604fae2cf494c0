//! The recording scenarios of Mistral Vibe: a repo, a prompt, a model script and the answers to
//! its permission requests each, run with the `agent-harness` library. Used by
//! `record.rs` (`cargo xtask record mistral-vibe <scenario>`) and by the tests that run
//! the real program, so a fixture can always be made again from the same definition.

#![allow(dead_code)] // each test target uses part of it

use std::path::{Path, PathBuf};

use agent_harness::files::{BASE_FILES, NPM_FAILING};
use agent_harness::{Fixtures, Recorder, Scenario};
use agent_vibe::{MistralVibe, install};
use model_server::{Block, HttpError, ModelServer, Script, Turn};
use runner_contract::Agent;
use serde_json::json;

/// The variable naming an install folder to test instead of the cached one.
pub const DIR_VAR: &str = "MISTRAL_VIBE_DIR";

/// The key the recordings use; the server accepts any.
pub const DUMMY_KEY: &str = "sk-dummy-for-recordings";

/// The Mistral Vibe under test: the install folder named by `MISTRAL_VIBE_DIR`, else the one
/// `cargo xtask agents` put in the cache, if it is there. Its VIBE_HOME is Vibe's default,
/// under the HOME the harness gives each run.
pub fn installed() -> Option<MistralVibe> {
    let folder = install_folder();
    install::program(&folder)
        .is_file()
        .then(|| MistralVibe::from_install(&folder, None))
}

/// Where the install is looked for.
pub fn install_folder() -> PathBuf {
    std::env::var_os(DIR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| install::folder(&runner_testkit::agents::cache_root()))
}

/// The provider variables that send Vibe to the scripted server (OpenAI Chat Completions).
pub fn provider_env(server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), server.openai_base_url()),
        ("OPENAI_API_KEY".into(), DUMMY_KEY.into()),
    ]
}

/// What `record.rs` checks and records.
pub fn recorder() -> Recorder {
    Recorder {
        program: format!("Mistral Vibe {}", install::VERSION),
        record_name: "mistral-vibe",
        fixtures: Fixtures::of(env!("CARGO_MANIFEST_DIR")),
        scenarios: all(),
        agent: || {
            let agent = installed().ok_or(format!(
                "Mistral Vibe is not installed: run `cargo xtask agents` first, or set {DIR_VAR} to an install folder"
            ))?;
            Ok(Box::new(agent) as Box<dyn Agent>)
        },
        provider_env,
    }
}

/// Vibe's tool that reads a file.
pub fn read(id: &str, path: &str) -> Block {
    Block::tool_use(id, "read_file", json!({ "path": path }))
}

/// Vibe's tool that replaces a string in a file.
pub fn edit(id: &str, path: &str, old: &str, new: &str) -> Block {
    Block::tool_use(
        id,
        "edit",
        json!({ "file_path": path, "old_string": old, "new_string": new }),
    )
}

/// Vibe's tool that writes a file whole.
pub fn write(id: &str, path: &str, content: &str) -> Block {
    Block::tool_use(
        id,
        "write_file",
        json!({ "path": path, "content": content }),
    )
}

/// Vibe's tool that runs a command (it asks first, in its default mode).
pub fn bash(id: &str, command: &str) -> Block {
    Block::tool_use(id, "bash", json!({ "command": command }))
}

/// The edit that fixes the month.
pub fn fix_month(id: &str) -> Block {
    edit(id, "src/date.js", "getMonth()}", "getMonth() + 1}")
}

fn scenario(name: &'static str, about: &'static str, script: fn(&Path) -> Script) -> Scenario {
    Scenario {
        name,
        about,
        prompt: "Fix the month in src/date.js.",
        files: BASE_FILES,
        test_command: None,
        model: Some("scripted-model"),
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
            "fix-the-month",
            "reads the file, edits it (edits need no permission), says it is done",
            |_| {
                Script::new([
                    Turn::blocks([
                        Block::text("Let me look at the file."),
                        read("call_r1", "src/date.js"),
                    ]),
                    Turn::blocks([
                        Block::text("getMonth() starts at 0; fixing."),
                        fix_month("call_e1"),
                    ]),
                    Turn::text("The month is fixed."),
                ])
            },
        ),
        scenario(
            "write-a-new-file",
            "writes a file that was not there",
            |_| {
                Script::new([
                    Turn::blocks([write("call_w1", "NOTES.md", "Months start at 1.\n")]),
                    Turn::text("Wrote NOTES.md."),
                ])
            },
        ),
        Scenario {
            files: NPM_FAILING,
            needs_npm: true,
            answers: &[true],
            ..scenario(
                "command-allowed",
                "asks to run `npm test`, is allowed: the tests fail",
                |_| {
                    Script::new([
                        Turn::blocks([
                            Block::text("Running the tests."),
                            bash("call_b1", "npm test"),
                        ]),
                        Turn::text("One test fails."),
                    ])
                },
            )
        },
        Scenario {
            answers: &[false],
            ..scenario(
                "command-denied",
                "asks to run `rm -rf src`, is denied",
                |_| {
                    Script::new([
                        Turn::blocks([bash("call_b2", "rm -rf src")]),
                        Turn::text("I will leave src alone."),
                    ])
                },
            )
        },
        scenario(
            "plan",
            "writes a todo list, which Vibe reports as a plan",
            |_| {
                Script::new([
                    Turn::blocks([Block::tool_use(
                        "call_t1",
                        "todo",
                        json!({"action": "write", "todos": [
                            {"id": "1", "content": "Read src/date.js", "status": "completed"},
                            {"id": "2", "content": "Fix the month", "status": "in_progress"},
                        ]}),
                    )]),
                    Turn::text("Planned."),
                ])
            },
        ),
        Scenario {
            notes: Some("Notes from earlier runs: dates are formatted in date.js."),
            ..scenario("notes", "repo notes go first in the prompt", |_| {
                Script::new([Turn::text("Noted.")])
            })
        },
        scenario("error-401", "the API refuses the key", |_| {
            Script::new([HttpError {
                message: "Incorrect API key provided.".into(),
                ..HttpError::status(401)
            }
            .into()])
        }),
    ]
}

/// The scenario named `name`.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}
