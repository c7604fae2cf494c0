//! Persistent sessions against small fake Claude programs.

use crate::fake;

use std::sync::Arc;
use std::time::{Duration, Instant};

use claude_lifecycle::{Error, SessionEvent, SessionOptions, SessionState};
use fake::{Out, events_until, exists, runner};

const GRACE: Duration = Duration::from_millis(300);

fn states(events: &[SessionEvent]) -> Vec<(SessionState, SessionState)> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::State { from, to } => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

fn inputs(events: &[SessionEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Input(input) => Some(input.text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_turn_moves_the_state_and_captures_the_session_id() {
    use SessionState::*;
    let out = Out::new();
    let session = runner("echo", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    assert_eq!(session.state(), Ready, "ready once spawned");
    let mut events = session.subscribe();
    let uuid = session.send("hello").await.unwrap();
    let seen = events_until(&mut events, |e| matches!(e, SessionEvent::Result(_))).await;
    assert_eq!(
        inputs(&seen),
        ["hello"],
        "the input came back as it was taken"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, SessionEvent::Input(i) if i.uuid == Some(uuid))),
        "with the uuid send gave"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, SessionEvent::Assistant(m) if m.text == "ack 1"))
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, SessionEvent::Stderr(l) if l == "fake claude: starting"))
    );
    let SessionEvent::Result(result) = seen.last().unwrap() else {
        unreachable!()
    };
    assert!(result.ok && result.text == "turn 1");
    assert_eq!(session.session_id().as_deref(), Some(fake::SID));
    let after = events_until(&mut events, |e| matches!(e, SessionEvent::State { .. })).await;
    let mut moves = states(&seen);
    moves.extend(states(&after));
    assert_eq!(
        moves,
        [(Starting, Ready), (Ready, Running), (Running, Ready)]
    );
    let status = session.status();
    assert!(status.started_at <= status.last_activity_at);
    let exit = session.close().await;
    assert_eq!(
        (exit.code, exit.signal),
        (Some(0), None),
        "it left at the end of stdin, unsignalled"
    );
    let rest = events_until(&mut events, |e| matches!(e, SessionEvent::Exit(_))).await;
    assert_eq!(states(&rest), [(Ready, Closed)]);
    let status = session.status();
    assert_eq!(
        (status.state, status.exit_code, status.exit_signal),
        (Closed, Some(0), None)
    );
}

#[tokio::test]
async fn the_config_is_a_copy_with_the_owned_flags_and_the_resume_id() {
    let out = Out::new();
    let id = "0B7D5F1E-7A1C-4C5E-9D55-1D2C3B4A5F60";
    let options = SessionOptions::new()
        .args(["--model", "m"])
        .resume_session_id(id);
    let session = runner("echo", &out, GRACE)
        .create_session(&options)
        .await
        .unwrap();
    let config = session.config();
    assert_eq!(
        config.resume_session_id.as_deref(),
        Some("0b7d5f1e-7a1c-4c5e-9d55-1d2c3b4a5f60")
    );
    assert_eq!(
        config.argv.join(" "),
        "-p --input-format stream-json --output-format stream-json --verbose \
         --replay-user-messages --resume 0b7d5f1e-7a1c-4c5e-9d55-1d2c3b4a5f60 --model m"
    );
    assert_eq!(config.shutdown_grace, GRACE);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sends_are_written_in_the_order_they_were_made() {
    let out = Out::new();
    let session = runner("echo", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    let mut events = session.subscribe();
    // Made in order, driven concurrently on other threads.
    let sends: Vec<_> = (0..50)
        .map(|i| tokio::spawn(session.send(&format!("input {i}"))))
        .collect();
    for send in sends {
        send.await.unwrap().unwrap();
    }
    let expected: Vec<String> = (0..50).map(|i| format!("input {i}")).collect();
    let mut results = 0;
    let seen = events_until(&mut events, |e| {
        results += usize::from(matches!(e, SessionEvent::Result(_)));
        results == 50
    })
    .await;
    assert_eq!(inputs(&seen), expected);
    let written: Vec<String> = out
        .read("inputs")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(written, expected, "each line whole, in order, on stdin");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sends_from_many_tasks_keep_each_tasks_order_and_never_mix_lines() {
    let out = Out::new();
    let session = Arc::new(
        runner("echo", &out, GRACE)
            .create_session(&SessionOptions::new())
            .await
            .unwrap(),
    );
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let session = session.clone();
            tokio::spawn(async move {
                for i in 0..20 {
                    session
                        .send(&format!("{t}-{i} {}", "x".repeat(5000)))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    session.close().await;
    let written: Vec<String> = out
        .read("inputs")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a whole line")["message"]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(written.len(), 80);
    for t in 0..4 {
        let mine: Vec<&str> = written
            .iter()
            .filter_map(|w| w.strip_prefix(&format!("{t}-")))
            .map(|w| w.split(' ').next().unwrap())
            .collect();
        let expected: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        assert_eq!(mine, expected, "task {t}'s inputs in its order");
    }
}

#[tokio::test]
async fn close_refuses_pending_and_later_sends_and_is_idempotent() {
    let out = Out::new();
    let session = runner("hang", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    // The fake never reads stdin: a line bigger than the pipe stays pending, the next queued.
    let big = session.send(&"x".repeat(1 << 20));
    let queued = session.send("after the big one");
    let big = tokio::spawn(big);
    let queued = tokio::spawn(queued);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!big.is_finished(), "the big write is pending");
    let first = session.close().await;
    assert!(matches!(big.await.unwrap(), Err(Error::Closed)));
    assert!(matches!(queued.await.unwrap(), Err(Error::Closed)));
    assert!(matches!(session.send("later").await, Err(Error::Closed)));
    assert_eq!(
        first.signal,
        Some(15),
        "it ignored the end of stdin, so TERM ended it"
    );
    assert_eq!(
        session.close().await,
        first,
        "a second close returns the same exit"
    );
    assert_eq!(session.state(), SessionState::Closed);
}

#[tokio::test]
async fn close_sends_term_after_a_grace_then_kill_after_another() {
    let out = Out::new();
    let session = runner("ignore-term", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    let pid = out.pid().await;
    let started = Instant::now();
    let exit = session.close().await;
    let took = started.elapsed();
    assert_eq!(exit.signal, Some(9), "TERM is ignored, so KILL ended it");
    assert!(out.read("signals").contains("term"), "TERM came first");
    assert!(
        took >= 2 * GRACE,
        "a grace after stdin, another after TERM: {took:?}"
    );
    assert!(!exists(pid), "reaped before close returned");
}

#[tokio::test]
async fn protocol_errors_are_reported_and_decoding_goes_on() {
    let out = Out::new();
    let session = runner("protocol", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    let mut events = session.subscribe();
    let seen = events_until(&mut events, |e| matches!(e, SessionEvent::Exit(_))).await;
    let errors: Vec<(String, String)> = seen
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ProtocolError(p) => Some((p.line.clone(), p.cause.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert_eq!(errors[0].0, "not json");
    assert!(errors[0].1.starts_with("not JSON"));
    assert_eq!(errors[1].0, r#"{"no":"type"}"#);
    assert_eq!(errors[2].1, "not UTF-8");
    assert!(
        seen.iter()
            .any(|e| matches!(e, SessionEvent::Assistant(m) if m.text == "still here"))
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, SessionEvent::Result(r) if r.text == "done")),
        "the unterminated last line is read"
    );
    use SessionState::*;
    assert_eq!(
        states(&seen),
        [
            (Starting, Ready),
            (Ready, Running),
            (Running, Ready),
            (Ready, Failed)
        ],
        "output runs a turn, its result ends it, and exit 3 by itself is a failure"
    );
    assert!(matches!(seen.last(), Some(SessionEvent::Exit(e)) if e.code == Some(3)));
    assert!(matches!(session.send("too late").await, Err(Error::Closed)));
}

#[tokio::test]
async fn a_session_nobody_listens_to_runs_and_closes() {
    let out = Out::new();
    // A long grace: the fake takes its time over that many inputs, and must end by itself.
    let session = runner("echo", &out, Duration::from_secs(60))
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    // Far more events than a listener could hold, and no listener at all.
    for i in 0..1000 {
        session.send(&format!("n{i}")).await.unwrap();
    }
    let exit = session.close().await;
    assert_eq!(exit.code, Some(0));
    assert_eq!(out.read("inputs").lines().count(), 1000);
}

#[tokio::test]
async fn dropping_a_session_ends_its_process() {
    let out = Out::new();
    let session = runner("ignore-term", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    let pid = out.pid().await;
    drop(session);
    for _ in 0..500 {
        if !exists(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the process {pid} outlived its dropped session");
}

#[tokio::test]
async fn a_session_that_cannot_start_is_a_spawn_error_and_bad_options_invalid_input() {
    let runner = claude_lifecycle::ClaudeRunner::new(
        claude_lifecycle::Defaults::default().program("/nonexistent/claude"),
    );
    assert!(matches!(
        runner.create_session(&SessionOptions::new()).await,
        Err(Error::Spawn { .. })
    ));
    for options in [
        SessionOptions::new().args(["--replay-user-messages"]),
        SessionOptions::new().args(["-r"]),
        SessionOptions::new().resume_session_id("not-a-uuid"),
    ] {
        assert!(
            matches!(
                runner.create_session(&options).await,
                Err(Error::InvalidInput(_))
            ),
            "{options:?}"
        );
    }
}

#[tokio::test]
async fn an_empty_input_is_refused() {
    let out = Out::new();
    let session = runner("echo", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    assert!(matches!(
        session.send(" \n").await,
        Err(Error::InvalidInput(_))
    ));
    session.close().await;
}

#[tokio::test]
async fn an_interrupt_is_written_in_order_with_the_inputs() {
    let out = Out::new();
    let session = runner("echo", &out, GRACE)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    let first = session.send("first");
    let interrupt = session.interrupt();
    let second = session.send("second");
    let (first, (), second) = (
        first.await.unwrap(),
        interrupt.await.unwrap(),
        second.await.unwrap(),
    );
    session.close().await;
    let lines: Vec<serde_json::Value> = out
        .read("inputs")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["uuid"], first.to_string());
    assert_eq!(lines[1]["type"], "control_request");
    assert_eq!(lines[1]["request"]["subtype"], "interrupt");
    assert_eq!(lines[2]["uuid"], second.to_string());
    assert!(matches!(session.interrupt().await, Err(Error::Closed)));
}
