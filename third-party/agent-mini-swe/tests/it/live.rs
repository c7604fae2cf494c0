//! The scenarios run again against the real mini-swe-agent 2.4.6: today's events
//! have the same types, in the same order, as the committed recording's, and the
//! requests show what the adapter promises (the key from the env, the model, the
//! notes, the prompt from stdin exactly as written).

use crate::scenarios;

use agent_harness::{Fixtures, Harness, RunOutput, parse_lines};
use agent_mini_swe::MiniSweAgent;

/// The installed mini-swe-agent, or a skip (a failure under CI=true).
fn mini() -> Option<MiniSweAgent> {
    let found = scenarios::installed();
    if found.is_none() {
        runner_testkit::skip(&format!(
            "mini-swe-agent is not installed: run `cargo xtask agents` (or set {})",
            scenarios::DIR_VAR
        ));
    }
    found
}

fn types_of(lines: impl IntoIterator<Item = String>) -> Vec<&'static str> {
    parse_lines(&MiniSweAgent::without_config("mini"), lines, Some(0))
        .iter()
        .map(|(e, _)| e.type_name())
        .collect()
}

fn recorded(name: &str) -> Vec<String> {
    Fixtures::of(env!("CARGO_MANIFEST_DIR")).lines(name)
}

/// The user message mini sent first: the task in mini's template.
fn task_message(output: &RunOutput) -> String {
    let body = output.requests[0].json().unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn todays_runs_match_the_recordings() {
    let Some(mini) = mini() else { return };
    let harness = Harness::new(&mini, &scenarios::provider_env);
    for name in ["fix-and-submit", "two-commands-in-one-turn", "error-401"] {
        let scenario = scenarios::find(name).unwrap();
        let output = harness.run(&scenario).await.unwrap();
        assert_eq!(
            types_of(output.lines.clone()),
            types_of(recorded(name)),
            "{name}: {}",
            output.stderr
        );
        if name == "fix-and-submit" {
            let fixed = std::fs::read_to_string(output.repo.join("src/date.js")).unwrap();
            assert!(
                fixed.contains("getMonth() + 1"),
                "the edit was made: {fixed}"
            );
        }
    }
}

#[tokio::test]
async fn the_requests_carry_the_key_model_and_notes() {
    let Some(mini) = mini() else { return };
    let harness = Harness::new(&mini, &scenarios::provider_env);
    let scenario = scenarios::find("notes").unwrap();
    let output = harness.run(&scenario).await.unwrap();
    assert_eq!(output.exit_code, Some(0), "{}", output.stderr);
    assert_eq!(output.requests.len(), 1, "one model call");
    let request = &output.requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {}", scenarios::DUMMY_KEY).as_str()),
        "the key comes from OPENAI_API_KEY, never from argv"
    );
    let body = request.json().unwrap();
    assert_eq!(
        body["model"], "scripted-model",
        "litellm drops the `openai/` route"
    );
    assert_eq!(body["tools"][0]["function"]["name"], "bash");
    let task = task_message(&output);
    assert!(
        task.contains(
            "Notes about this repository from earlier sessions:\nUse two spaces for indentation."
        ),
        "{task}"
    );
}

#[tokio::test]
async fn a_prompt_of_flags_and_template_syntax_arrives_as_written() {
    let Some(mini) = mini() else { return };
    let harness = Harness::new(&mini, &scenarios::provider_env);
    let scenario = scenarios::find("prompt-as-text").unwrap();
    let output = harness.run(&scenario).await.unwrap();
    assert_eq!(output.exit_code, Some(0), "{}", output.stderr);
    let task = task_message(&output);
    assert!(
        task.starts_with(&format!("Please solve this issue: {}\n", scenario.prompt)),
        "{task:?}"
    );
}
