//! Any ACP agent under runner-testkit's lifecycle suite: the real `vibe-acp` run by
//! agent-acp's `AcpAgent` alone, with the settings a profile would give it (see
//! `lifecycle.rs`), so the generic adapter goes through a whole life with a real program:
//! approve, reject, a stop and a resume that loads the session, the caller's secrets, a
//! follow-up, each command asked about and allowed by the suite.
//!
//! The suite's 401 step wants `provider.status` `auth_expired` first, which a generic ACP
//! client cannot know from Vibe's own error code (`refusal.rs` of this crate reads it for
//! Vibe); the last test says what the generic adapter does instead.

use runner_contract::event::FailureKind;
use runner_contract::{ErrorKind, EventBody, SessionId, SessionState, StartOptions};
use runner_testkit::lifecycle::{self, RealAgent, Scene};

use crate::lifecycle::{AS_ACP, vibe_on_stage_as};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_approved_as_one_commit_on_its_branch() {
    if let Some(agent) = vibe_on_stage_as(true) {
        lifecycle::approve(&agent).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_change_leaves_nothing() {
    if let Some(agent) = vibe_on_stage_as(true) {
        lifecycle::reject(&agent).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_run_ends_its_command_and_resumes() {
    if let Some(agent) = vibe_on_stage_as(true) {
        lifecycle::stop_and_resume(&agent).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_secrets_never_reach_the_agent_and_its_key_no_reader() {
    if let Some(agent) = vibe_on_stage_as(true) {
        lifecycle::secrets(&agent).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_continues_the_conversation() {
    if let Some(agent) = vibe_on_stage_as(true) {
        lifecycle::follow_up(&agent).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_fails_the_turn_with_the_agents_words_and_approve_is_refused() {
    let Some(agent) = vibe_on_stage_as(true) else {
        return;
    };
    let id = SessionId::new_random();
    let stage = agent.stage(Scene::Unauthorized, id, &[]).await;
    let mut options = StartOptions::new(id, &stage.repo, "Fix it", agent.name());
    options.model = agent.model();
    let events = runner_testkit::runner::collect(stage.runner.start(options).await.unwrap()).await;
    let Some(EventBody::TaskFailed(failed)) = events.last().map(|e| &e.body) else {
        panic!("the turn fails: {events:?}");
    };
    assert_eq!(failed.reason, FailureKind::AgentError, "{}", failed.message);
    assert!(
        failed.message.contains("Invalid API key"),
        "in the agent's words: {}",
        failed.message
    );
    assert!((stage.requests)().len() < 6, "no retries after the refusal");
    let record = stage.runner.session(&id).await.unwrap();
    assert_eq!(
        (record.state, record.agent.as_str()),
        (SessionState::Failed, AS_ACP)
    );
    runner_testkit::expect_error(
        stage.runner.approve(&id, "x").await,
        ErrorKind::IllegalMove,
        "approve a failed session",
    );
}
