//! The `Runner` conformance suite.

use futures::StreamExt;

use super::expect_error;
use runner_contract::{
    ErrorKind, Event, EventBody, EventStream, Runner, SessionId, SessionState, StartOptions,
};

/// Makes start options for a fresh session id (a repo, a prompt, an agent).
pub type OptionsFor<'a> = &'a (dyn Fn(SessionId) -> StartOptions + Sync);

/// Collects a stream to its end.
pub async fn collect(stream: EventStream) -> Vec<Event> {
    stream.collect().await
}

fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.body.type_name()).collect()
}

/// Checks the invariants of one finished run's events, starting at `first_seq`.
pub fn assert_well_formed_run(events: &[Event], id: SessionId, first_seq: u64) {
    assert!(!events.is_empty(), "a run yields events");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.session_id, id, "event {i} has the wrong session id");
        assert_eq!(
            event.seq,
            first_seq + i as u64,
            "seq is contiguous: {:?}",
            types(events)
        );
    }
    let terminal: Vec<_> = events.iter().filter(|e| e.body.is_terminal()).collect();
    assert_eq!(
        terminal.len(),
        1,
        "exactly one terminal event: {:?}",
        types(events)
    );
    let last = events.last().map(|e| &e.body);
    if let Some(EventBody::TaskFinished(_)) = events.iter().rev().nth(1).map(|e| &e.body) {
        assert!(
            matches!(last, Some(EventBody::ApprovalRequested(_))),
            "approval.requested right after task.finished"
        );
    } else {
        assert!(
            !events
                .iter()
                .any(|e| matches!(e.body, EventBody::ApprovalRequested(_))),
            "no approval.requested after a stop or a failure: {:?}",
            types(events)
        );
    }
    if let Some(EventBody::TaskFinished(f)) = events
        .iter()
        .find(|e| matches!(e.body, EventBody::TaskFinished(_)))
        .map(|e| &e.body)
    {
        assert!(f.diff_stat.is_some(), "task.finished carries diffStat");
    }
}

/// A run ends in `approval.requested` and `awaiting_approval`, and its diff can be read.
pub async fn start_runs_to_approval(runner: &dyn Runner, options: OptionsFor<'_>) {
    let id = SessionId::new_random();
    let events = collect(runner.start(options(id)).await.expect("start")).await;
    assert_well_formed_run(&events, id, 1);
    assert!(
        matches!(events[0].body, EventBody::TaskStarted(_)),
        "the first event is task.started: {:?}",
        types(&events)
    );
    assert!(
        matches!(events.last().unwrap().body, EventBody::ApprovalRequested(_)),
        "ends in approval.requested"
    );
    assert_eq!(
        runner.session(&id).await.expect("session").state,
        SessionState::AwaitingApproval
    );
    runner.diff(&id).await.expect("diff of a finished session");
}

/// Approve is refused while running and after approving; it works once, from `awaiting_approval`.
pub async fn approve_only_after_finishing(runner: &dyn Runner, options: OptionsFor<'_>) {
    let id = SessionId::new_random();
    let mut stream = runner.start(options(id)).await.expect("start");
    let first = stream.next().await.expect("a first event");
    assert!(matches!(first.body, EventBody::TaskStarted(_)));
    expect_error(
        runner.approve(&id, "too early").await,
        ErrorKind::IllegalMove,
        "approve while running",
    );
    expect_error(
        runner.reject(&id).await,
        ErrorKind::IllegalMove,
        "reject while running",
    );
    let rest: Vec<Event> = stream.collect().await;
    assert!(matches!(
        rest.last().map(|e| &e.body),
        Some(EventBody::ApprovalRequested(_))
    ));
    let approved = runner
        .approve(&id, "Approve in the conformance suite")
        .await
        .expect("approve");
    assert!(
        approved.branch.starts_with("codehands/"),
        "branch {} is codehands/…",
        approved.branch
    );
    assert!(!approved.commit.is_empty());
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Approved
    );
    expect_error(
        runner.approve(&id, "twice").await,
        ErrorKind::IllegalMove,
        "approve twice",
    );
    expect_error(
        runner.reject(&id).await,
        ErrorKind::IllegalMove,
        "reject after approve",
    );
}

/// Reject works from `awaiting_approval`, and the session is final afterwards.
pub async fn reject_after_finishing(runner: &dyn Runner, options: OptionsFor<'_>) {
    let id = SessionId::new_random();
    collect(runner.start(options(id)).await.expect("start")).await;
    runner.reject(&id).await.expect("reject");
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Rejected
    );
    expect_error(
        runner.approve(&id, "after reject").await,
        ErrorKind::IllegalMove,
        "approve after reject",
    );
    expect_error(
        runner.resume(&id, None).await.map(|_| ()),
        ErrorKind::IllegalMove,
        "resume after reject",
    );
}

/// Stop ends the stream with `task.stopped` (no approval), resume continues seq and
/// ends in approval; stop and resume refuse sessions in the wrong state.
///
/// `slow` must give a run long enough to be stopped after its first event.
pub async fn stop_then_resume_continues_seq(runner: &dyn Runner, slow: OptionsFor<'_>) {
    let id = SessionId::new_random();
    let mut stream = runner.start(slow(id)).await.expect("start");
    let first = stream.next().await.expect("a first event");
    assert_eq!(first.seq, 1);
    expect_error(
        runner.resume(&id, None).await.map(|_| ()),
        ErrorKind::IllegalMove,
        "resume while running",
    );
    runner.stop(&id).await.expect("stop");
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::Stopped,
        "stop returns once stopped"
    );
    let mut events = vec![first];
    events.extend(stream.collect::<Vec<_>>().await);
    assert_well_formed_run(&events, id, 1);
    assert!(
        matches!(events.last().unwrap().body, EventBody::TaskStopped(_)),
        "the stream ends with task.stopped: {:?}",
        types(&events)
    );
    expect_error(
        runner.stop(&id).await,
        ErrorKind::IllegalMove,
        "stop a stopped session",
    );
    expect_error(
        runner.approve(&id, "stopped").await,
        ErrorKind::IllegalMove,
        "approve a stopped session",
    );

    let last = events.last().unwrap().seq;
    let resumed = collect(
        runner
            .resume(&id, Some("Carry on.".into()))
            .await
            .expect("resume"),
    )
    .await;
    assert_well_formed_run(&resumed, id, last + 1);
    assert!(
        matches!(
            resumed.last().unwrap().body,
            EventBody::ApprovalRequested(_)
        ),
        "a resumed run ends in approval: {:?}",
        types(&resumed)
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval
    );
    expect_error(
        runner.stop(&id).await,
        ErrorKind::IllegalMove,
        "stop a finished session",
    );
}

/// Unknown sessions are `NotFound` for every method.
pub async fn unknown_sessions_are_not_found(runner: &dyn Runner) {
    let id = SessionId::new_random();
    expect_error(runner.diff(&id).await, ErrorKind::NotFound, "diff");
    expect_error(
        runner.approve(&id, "x").await,
        ErrorKind::NotFound,
        "approve",
    );
    expect_error(runner.reject(&id).await, ErrorKind::NotFound, "reject");
    expect_error(runner.stop(&id).await, ErrorKind::NotFound, "stop");
    expect_error(
        runner.resume(&id, None).await.map(|_| ()),
        ErrorKind::NotFound,
        "resume",
    );
    expect_error(runner.session(&id).await, ErrorKind::NotFound, "session");
}

/// A session id that is already taken is refused and the first session is untouched.
pub async fn duplicate_session_ids_are_refused(runner: &dyn Runner, options: OptionsFor<'_>) {
    let id = SessionId::new_random();
    collect(runner.start(options(id)).await.expect("start")).await;
    expect_error(
        runner.start(options(id)).await.map(|_| ()),
        ErrorKind::InvalidInput,
        "start with a taken id",
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval
    );
}

/// Runs every suite above.
pub async fn run_all(runner: &dyn Runner, quick: OptionsFor<'_>, slow: OptionsFor<'_>) {
    start_runs_to_approval(runner, quick).await;
    approve_only_after_finishing(runner, quick).await;
    reject_after_finishing(runner, quick).await;
    stop_then_resume_continues_seq(runner, slow).await;
    unknown_sessions_are_not_found(runner).await;
    duplicate_session_ids_are_refused(runner, quick).await;
}
