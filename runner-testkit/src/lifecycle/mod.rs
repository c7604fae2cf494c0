//! The lifecycle suite: a real agent's whole life under the runner, defined once and run by
//! every real agent's end-to-end tests (their program against the scripted model server):
//! approve, reject, stop and resume, a 401, the caller's secrets, a follow-up.
//!
//! An agent's tests implement [`RealAgent`]: it says the agent's name and sets a [`Stage`]
//! for a [`Scene`] (a fresh repo of the demo's files, a model server scripted in its own
//! API to play the scene, a runner whose agent talks to it). [`lifecycle_tests!`] then
//! makes one test per step of the suite; each step is also a public async function.
//!
//! The suite drives the runner through the contract's `Runner` trait only: the stage
//! builds the real runner (`LocalRunner`, in the engine the agent's tests already depend
//! on), so this crate stays over the contract. An agent that asks before its commands
//! ([`RealAgent::asks_permission`]) runs its scenes asking, and the suite, as the caller,
//! allows each request through `Runner::answer`.
//!
//! [`lifecycle_tests!`]: crate::lifecycle_tests

mod answer;
mod look;
mod tests_macro;

use std::any::Any;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;

use crate::expect_error;
use crate::runner::assert_well_formed_run;
use answer::allow_if_asked;
use look::{git, pause, process_running, test_verdicts, types, worktrees_left};
use runner_contract::{
    AgentName, ErrorKind, Event, EventBody, EventStream, Home, Permissions, Runner, Sent,
    SessionId, SessionRecord, SessionState, StartOptions,
};

/// What the scripted model does in a scene; each agent's tests script it in their API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scene {
    /// The demo's fix: run `npm test` (it fails), make the month start at one in
    /// `src/date.js`, run `npm test` again (it passes), say so.
    FixTheDemo,
    /// Run `command` (a sleep long enough to be stopped); after a resume, finish.
    Slow {
        /// The command, unique to this run, so the suite can look for its process.
        command: String,
    },
    /// Answer every request with HTTP 401.
    Unauthorized,
    /// Run a command the agent may run that prints its environment (`env`, or `npm test` of
    /// a repo whose test script prints it), then say "Printed.".
    PrintEnv,
    /// Write `first.txt` and say "Wrote first.txt."; from a user message holding `marker`
    /// on, write `second.txt`.
    FollowUp {
        /// What marks the follow-up's message.
        marker: String,
    },
}

/// A request the scripted model server was sent.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// The path (`/v1/messages`, `/v1/responses` …).
    pub path: String,
    /// Its headers.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: String,
}

/// A scene set for one session: its repo, home and runner, and the server playing the model.
pub struct Stage {
    /// The runner (the real one, boxed), whose agent talks to the scripted server.
    pub runner: Box<dyn Runner>,
    /// The person's repository (the demo's files, one commit on `main`).
    pub repo: PathBuf,
    /// The codehands home of the runner.
    pub home: Home,
    /// Every request the server was sent so far.
    pub requests: Box<dyn Fn() -> Vec<SeenRequest> + Send + Sync>,
    /// What must live as long as the scene (temp folders, the server).
    pub keep: Box<dyn Any + Send + Sync>,
}

/// A real agent under the suite.
#[async_trait]
pub trait RealAgent: Send + Sync {
    /// The agent's name, for `StartOptions`.
    fn name(&self) -> AgentName;

    /// The model to ask for, when its scripts need one.
    fn model(&self) -> Option<String> {
        None
    }

    /// Whether the agent continues a conversation (resume, follow-up); an agent that
    /// cannot must have both refused.
    fn resumes(&self) -> bool;

    /// The provider key its runner gives it: never in an event or the transcript.
    fn key(&self) -> &str;

    /// Whether the agent asks the caller before it runs the scenes' commands, so the scenes
    /// run asking ([`Permissions::ask`]) and the suite, as the caller, allows each
    /// `permission.requested` through `Runner::answer`. Say `true` only for an agent whose
    /// capabilities say it asks (`AgentCapabilities::ask_permission`) and that refuses the
    /// scenes' commands when not asked (an ACP agent asks before every command, and the
    /// default mode denies at once). `false` by default: the runs deny what the agent's own
    /// allow list does not allow, and no request is ever answered.
    fn asks_permission(&self) -> bool {
        false
    }

    /// A fresh stage for `scene`, for the session `id`, with `extra` variables in the
    /// caller's environment besides the provider's.
    async fn stage(&self, scene: Scene, id: SessionId, extra: &[(&str, &str)]) -> Stage;

    /// What only this agent shows of the demo's fix, checked after [`approve`]'s run and
    /// before its approve: the events, the record and the requests the model server saw.
    /// Nothing by default.
    fn check_fix(&self, events: &[Event], record: &SessionRecord, requests: &[SeenRequest]) {
        let _ = (events, record, requests);
    }
}

fn options(agent: &dyn RealAgent, stage: &Stage, id: SessionId, prompt: &str) -> StartOptions {
    let mut options = StartOptions::new(id, &stage.repo, prompt, agent.name());
    options.model = agent.model();
    if agent.asks_permission() {
        options.permissions = Permissions::ask();
    }
    options
}

/// A run's events to its end, the agent's permission requests allowed when it asks.
async fn collect(
    agent: &dyn RealAgent,
    stage: &Stage,
    id: &SessionId,
    stream: EventStream,
) -> Vec<Event> {
    answer::collect(stage.runner.as_ref(), id, stream, agent.asks_permission()).await
}

/// The demo's fix runs to approval (the tests failed, then passed) and is approved as one
/// commit on the session's branch: the person's branch unmoved, the worktree gone.
pub async fn approve(agent: &dyn RealAgent) {
    let id = SessionId::new_random();
    let stage = agent.stage(Scene::FixTheDemo, id, &[]).await;
    let prompt = "Fix the failing date test.";
    let events = collect(
        agent,
        &stage,
        &id,
        stage
            .runner
            .start(options(agent, &stage, id, prompt))
            .await
            .expect("start"),
    )
    .await;
    assert_well_formed_run(&events, id, 1);
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    assert_eq!(
        test_verdicts(&events),
        [false, true],
        "npm test failed, then passed"
    );
    let record = stage.runner.session(&id).await.expect("the record");
    assert_eq!(record.agent, agent.name());
    agent.check_fix(&events, &record, &(stage.requests)());
    let approved = stage
        .runner
        .approve(&id, "Fix the month")
        .await
        .expect("approve");
    assert!(
        approved.branch.starts_with("codehands/") && approved.branch.ends_with(&id.short()),
        "{}",
        approved.branch
    );
    let range = format!("{}..{}", record.base_commit, approved.branch);
    assert_eq!(
        git(&stage.repo, &["rev-list", "--count", &range]).trim(),
        "1",
        "one commit"
    );
    assert_eq!(
        git(&stage.repo, &["rev-parse", "main"]).trim(),
        record.base_commit,
        "the person's branch did not move"
    );
    let fixed = git(
        &stage.repo,
        &["show", &format!("{}:src/date.js", approved.branch)],
    );
    assert!(fixed.contains("getMonth() + 1"), "{fixed}");
    assert!(!record.worktree_path.exists(), "the worktree is gone");
}

/// The demo's fix, rejected: no branch and no worktree left, the session `rejected`.
pub async fn reject(agent: &dyn RealAgent) {
    let id = SessionId::new_random();
    let stage = agent.stage(Scene::FixTheDemo, id, &[]).await;
    let events = collect(
        agent,
        &stage,
        &id,
        stage
            .runner
            .start(options(agent, &stage, id, "Fix the failing date test."))
            .await
            .expect("start"),
    )
    .await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    stage.runner.reject(&id).await.expect("reject");
    assert_eq!(
        git(&stage.repo, &["branch", "--format=%(refname:short)"]).trim(),
        "main",
        "the session's branch is gone"
    );
    assert!(worktrees_left(&stage.home).is_empty(), "no worktree left");
    assert_eq!(
        stage.runner.session(&id).await.expect("the record").state,
        SessionState::Rejected
    );
}

/// A stop while a command runs ends the turn (`task.stopped`, no approval) and the command
/// with it. An agent that resumes continues: the seq goes on, the resume's prompt reaches
/// the model with the first turn's conversation. One that cannot refuses the resume.
pub async fn stop_and_resume(agent: &dyn RealAgent) {
    let id = SessionId::new_random();
    // A sleep no other process on the machine runs, so the checks below see only this one:
    // its fraction of a second is this process's id and digits of the session's (a number,
    // or `sleep` would refuse it and end at once).
    let digits = u32::from_str_radix(&id.short()[..4], 16).expect("a session id is hex");
    let command = format!("sleep 30.{}{digits:05}", std::process::id());
    let marker = command.clone();
    let stage = agent.stage(Scene::Slow { command }, id, &[]).await;
    let first_prompt = "Wait, then fix the month.";
    let mut stream = stage
        .runner
        .start(options(agent, &stage, id, first_prompt))
        .await
        .expect("start");
    // An agent that asks reports the command before it asks: it runs once allowed.
    let asks = agent.asks_permission();
    let (mut started, mut allowed) = (false, !asks);
    let mut first = Vec::new();
    while let Some(event) = stream.next().await {
        started |= matches!(event.body, EventBody::CommandStarted(_));
        if asks {
            allowed |= allow_if_asked(stage.runner.as_ref(), &id, &event).await;
        }
        first.push(event);
        if started && allowed {
            break;
        }
    }
    if asks {
        let asked_at = Instant::now();
        while !process_running(&marker) {
            assert!(
                asked_at.elapsed() < Duration::from_secs(60),
                "the allowed command never ran: {:?}",
                types(&first)
            );
            pause(Duration::from_millis(100)).await;
        }
    }
    stage.runner.stop(&id).await.expect("stop");
    first.extend(stream.collect::<Vec<_>>().await);
    assert_eq!(
        types(&first).last(),
        Some(&"task.stopped"),
        "{:?}",
        types(&first)
    );
    assert!(
        !first
            .iter()
            .any(|e| matches!(e.body, EventBody::ApprovalRequested(_))),
        "no approval after a stop"
    );
    assert!(!process_running(&marker), "the command died with the run");
    if !agent.resumes() {
        expect_error(
            stage
                .runner
                .resume(&id, Some("Please finish.".into()))
                .await
                .map(|_| ()),
            ErrorKind::Unsupported,
            "a resume of an agent that cannot",
        );
        return;
    }
    let last = first.last().expect("events").seq;
    let resumed = collect(
        agent,
        &stage,
        &id,
        stage
            .runner
            .resume(&id, Some("Please finish.".into()))
            .await
            .expect("resume"),
    )
    .await;
    assert_eq!(
        resumed[0].seq,
        last + 1,
        "seq continues: {:?}",
        types(&resumed)
    );
    assert!(
        matches!(
            resumed.last().map(|e| &e.body),
            Some(EventBody::ApprovalRequested(_) | EventBody::TaskFailed(_))
        ),
        "{:?}",
        types(&resumed)
    );
    let requests = (stage.requests)();
    let resumed_request = requests
        .iter()
        .find(|r| r.body.contains("Please finish."))
        .expect("the resume prompt reached the model");
    assert!(
        resumed_request.body.contains(first_prompt),
        "with the first turn's conversation: {}",
        resumed_request.body
    );
}

/// A 401 fails the run at the first sign (`provider.status` `auth_expired`, then
/// `task.failed` `auth_failed`, long before an agent's own retries end), and approve is refused.
pub async fn unauthorized(agent: &dyn RealAgent) {
    let id = SessionId::new_random();
    let stage = agent.stage(Scene::Unauthorized, id, &[]).await;
    let started = Instant::now();
    let events = collect(
        agent,
        &stage,
        &id,
        stage
            .runner
            .start(options(agent, &stage, id, "Fix it"))
            .await
            .expect("start"),
    )
    .await;
    let statuses: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ProviderStatus(p) => Some(p.status),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses.first(),
        Some(&runner_contract::event::ProviderState::AuthExpired),
        "{:?}",
        types(&events)
    );
    match &events.last().expect("events").body {
        EventBody::TaskFailed(f) => assert_eq!(
            f.reason,
            runner_contract::event::FailureKind::AuthFailed,
            "{}",
            f.message
        ),
        other => panic!("expected task.failed, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "fails at the first sign, not after the agent's retries"
    );
    let tries = (stage.requests)().len();
    assert!(
        tries < 6,
        "ended before the agent's retries ({tries} requests)"
    );
    assert_eq!(
        stage.runner.session(&id).await.expect("the record").state,
        SessionState::Failed
    );
    expect_error(
        stage.runner.approve(&id, "x").await,
        ErrorKind::IllegalMove,
        "approve a failed session",
    );
}

/// The caller's other secrets never reach the agent (nor, through it, the model), and the
/// agent's own key, printed by a command, is cut from the transcript and every event.
pub async fn secrets(agent: &dyn RealAgent) {
    let id = SessionId::new_random();
    let canary = "canary-7f3b9c2e-never-leaks";
    let stage = agent
        .stage(
            Scene::PrintEnv,
            id,
            &[
                ("AWS_SECRET_ACCESS_KEY", canary),
                ("GITHUB_TOKEN", canary),
                ("CODEHANDS_CANARY", canary),
            ],
        )
        .await;
    let events = collect(
        agent,
        &stage,
        &id,
        stage
            .runner
            .start(options(agent, &stage, id, "Print the environment."))
            .await
            .expect("start"),
    )
    .await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    let requests = (stage.requests)();
    assert!(
        requests.iter().any(|r| r.body.contains("PATH")),
        "the command printed its environment to the model"
    );
    for request in &requests {
        assert!(
            !request.body.contains(canary)
                && request.headers.iter().all(|(_, v)| !v.contains(canary)),
            "a caller secret reached the agent: {}",
            request.path
        );
    }
    let transcript = std::fs::read_to_string(stage.home.run_dir(&id).join("transcript.jsonl"))
        .expect("the transcript");
    assert!(
        !transcript.contains(agent.key()),
        "the key is never in the transcript"
    );
    if requests.iter().any(|r| r.body.contains(agent.key())) {
        assert!(
            transcript.contains("[redacted]"),
            "the key the command printed was cut out of the transcript"
        );
    }
    for event in &events {
        let json = serde_json::to_string(event).expect("JSON");
        assert!(!json.contains(agent.key()), "the key is never in an event");
        assert!(
            !json.contains(canary),
            "a caller secret is never in an event"
        );
    }
}

/// A session awaiting approval takes a follow-up turn in the same conversation: its events
/// continue the seq, its diff holds both changes, and approve commits both. An agent that
/// cannot continue a conversation refuses the follow-up.
pub async fn follow_up(agent: &dyn RealAgent) {
    let id = SessionId::new_random();
    let marker = "FOLLOW-UP-MARK";
    let scene = if agent.resumes() {
        Scene::FollowUp {
            marker: marker.into(),
        }
    } else {
        Scene::FixTheDemo
    };
    let stage = agent.stage(scene, id, &[]).await;
    let events = collect(
        agent,
        &stage,
        &id,
        stage
            .runner
            .start(options(agent, &stage, id, "Write first.txt"))
            .await
            .expect("start"),
    )
    .await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );
    let text = format!("{marker}: now write second.txt too");
    if !agent.resumes() {
        expect_error(
            stage.runner.send(&id, text).await,
            ErrorKind::Unsupported,
            "a follow-up of an agent that cannot continue a conversation",
        );
        return;
    }
    let Sent::FollowUp(stream) = stage.runner.send(&id, text).await.expect("send") else {
        panic!("a session awaiting approval takes a follow-up turn");
    };
    let more = collect(agent, &stage, &id, stream).await;
    assert_well_formed_run(&more, id, events.len() as u64 + 1);
    let Some(EventBody::ApprovalRequested(asked)) = more.last().map(|e| &e.body) else {
        panic!("the follow-up ends awaiting approval: {:?}", types(&more));
    };
    let paths: Vec<&str> = asked
        .diff_stat
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        paths,
        ["first.txt", "second.txt"],
        "the second diff holds both changes"
    );
    let requests = (stage.requests)();
    let followed = requests
        .iter()
        .find(|r| r.body.contains("now write second.txt too"))
        .expect("the follow-up's message reached the model");
    assert!(
        followed.body.contains("Wrote first.txt."),
        "the follow-up continued the same conversation: {}",
        followed.body
    );
    let approved = stage
        .runner
        .approve(&id, "Both files")
        .await
        .expect("approve");
    let files = git(
        &stage.repo,
        &["show", "--name-only", "--format=%s", &approved.commit],
    );
    assert_eq!(files.trim(), "Both files\n\nfirst.txt\nsecond.txt");
}
