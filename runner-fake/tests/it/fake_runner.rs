//! The fake runner passes the Runner conformance suite and plays its script exactly.

use std::time::Duration;

use runner_contract::{AgentName, EventBody, Runner, SessionId, StartOptions};
use runner_fake::{FakeRunner, FakeRunnerOptions};
use runner_testkit::runner as suite;

fn instant() -> FakeRunner {
    FakeRunner::new(FakeRunnerOptions {
        delay: Duration::ZERO,
    })
}

fn options(id: SessionId) -> StartOptions {
    StartOptions::new(
        id,
        "/nowhere/needed",
        "Fix the failing test. Run npm test to check.",
        AgentName::parse("fake").unwrap(),
    )
}

#[tokio::test]
async fn passes_the_runner_conformance_suite() {
    let runner = instant();
    suite::run_all(&runner, &options, &options).await;
}

#[tokio::test]
async fn passes_the_suite_with_a_delay_too() {
    let runner = FakeRunner::new(FakeRunnerOptions {
        delay: Duration::from_millis(2),
    });
    suite::stop_then_resume_continues_seq(&runner, &options).await;
    suite::start_runs_to_approval(&runner, &options).await;
}

#[tokio::test]
async fn plays_twelve_events_then_approval() {
    let runner = instant();
    let id = SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap();
    let events = suite::collect(runner.start(options(id)).await.unwrap()).await;
    assert_eq!(events.len(), 13);
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=13).collect::<Vec<_>>()
    );
    assert!(matches!(events[11].body, EventBody::TaskFinished(_)));
    assert!(matches!(events[12].body, EventBody::ApprovalRequested(_)));
    insta::assert_json_snapshot!("fake_run", events, { "[].ts" => "[ts]" });
}

#[tokio::test]
async fn no_approval_after_a_stop_and_seq_continues_on_resume() {
    let runner = instant();
    let id = SessionId::new_random();
    let mut stream = runner.start(options(id)).await.unwrap();
    use futures::StreamExt;
    let first = stream.next().await.unwrap();
    let second = stream.next().await.unwrap();
    runner.stop(&id).await.unwrap();
    let rest: Vec<_> = stream.collect().await;
    let all: Vec<_> = [first, second].into_iter().chain(rest).collect();
    assert!(
        all.iter()
            .all(|e| !matches!(e.body, EventBody::ApprovalRequested(_)))
    );
    let last = all.last().unwrap();
    assert!(matches!(last.body, EventBody::TaskStopped(_)));
    let resumed = suite::collect(runner.resume(&id, Some("Finish it".into())).await.unwrap()).await;
    assert_eq!(resumed[0].seq, last.seq + 1);
    match &resumed[1].body {
        EventBody::Message(m) => assert!(
            m.text.contains("Finish it"),
            "the resume prompt reaches the run: {}",
            m.text
        ),
        other => panic!("expected a message, got {other:?}"),
    }
    assert_eq!(
        runner.session(&id).await.unwrap().last_seq,
        resumed.last().unwrap().seq
    );
}

#[tokio::test]
async fn an_empty_prompt_is_refused_and_nothing_is_kept() {
    let runner = instant();
    let id = SessionId::new_random();
    let mut opts = options(id);
    opts.prompt = "  \n".into();
    let err = runner.start(opts).await.err().expect("refused");
    assert_eq!(err.kind(), runner_contract::ErrorKind::InvalidInput);
    assert!(runner.sessions().await.unwrap().is_empty());
}
