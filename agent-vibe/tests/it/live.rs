//! The real Mistral Vibe against the scripted model server, for what the recordings cannot
//! show: what reached the model.

use crate::scenarios;

use agent_harness::Harness;

#[tokio::test]
async fn the_notes_then_the_prompt_reach_the_model_as_the_users_message() {
    let Some(vibe) = scenarios::installed() else {
        runner_testkit::skip("Mistral Vibe is not installed: run `cargo xtask agents`");
        return;
    };
    let harness = Harness::new(&vibe, &scenarios::provider_env);
    let output = harness
        .run(&scenarios::find("notes").unwrap())
        .await
        .unwrap();
    assert_eq!(output.exit_code, Some(0), "{}", output.stderr);
    let body = output.requests[0].json().unwrap();
    let users: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    let last = users.last().unwrap();
    let notes = last
        .find("dates are formatted in date.js")
        .expect("the notes");
    let prompt = last
        .find("Fix the month in src/date.js.")
        .expect("the prompt");
    assert!(notes < prompt, "the notes come first: {last}");
}
