//! One-shot jobs against small fake Claude programs.

use crate::fake;

use std::time::{Duration, Instant};

use claude_lifecycle::{ClaudeRunner, Defaults, Error, Job};
use fake::{Out, exists, runner};

const GRACE: Duration = Duration::from_millis(200);

#[tokio::test]
async fn a_result_without_is_error_and_exit_0_is_ok() {
    let out = Out::new();
    let result = runner("job-ok", &out, GRACE)
        .run(&Job::new("hi"))
        .await
        .unwrap();
    assert!(result.ok, "{result:?}");
    assert_eq!(result.text, "done");
    assert_eq!(result.raw.unwrap()["session_id"], fake::SID);
    assert!(result.exit.success() && !result.timed_out);
}

#[tokio::test]
async fn a_result_with_is_error_is_not_ok_and_keeps_its_text_and_raw() {
    let out = Out::new();
    let result = runner("job-is-error", &out, GRACE)
        .run(&Job::new("hi"))
        .await
        .unwrap();
    assert!(!result.ok);
    assert_eq!(result.text, "it broke");
    assert_eq!(result.raw.unwrap()["is_error"], true);
}

#[tokio::test]
async fn output_without_a_result_is_not_ok_with_the_output_as_text_and_no_raw() {
    let out = Out::new();
    let result = runner("job-not-json", &out, GRACE)
        .run(&Job::new("hi"))
        .await
        .unwrap();
    assert!(!result.ok);
    assert_eq!(result.text, "this is not json\n{\"type\":");
    assert_eq!(result.raw, None);
    assert!(result.exit.success(), "exit 0 alone is not ok");
}

#[tokio::test]
async fn a_non_zero_exit_is_not_ok_even_with_a_good_result() {
    let out = Out::new();
    let result = runner("job-exit-2", &out, GRACE)
        .run(&Job::new("hi"))
        .await
        .unwrap();
    assert!(!result.ok);
    assert_eq!(result.exit.code, Some(2));
    assert_eq!(result.text, "done");
    assert!(result.raw.is_some());
}

#[tokio::test]
async fn an_unterminated_last_line_is_still_read_as_the_result() {
    let out = Out::new();
    let result = runner("job-unterminated", &out, GRACE)
        .run(&Job::new("hi"))
        .await
        .unwrap();
    assert!(result.ok, "{result:?}");
    assert_eq!(result.text, "done");
}

#[tokio::test]
async fn a_timeout_ends_and_reaps_the_process_and_returns_nothing() {
    let out = Out::new();
    let runner = runner("ignore-term", &out, GRACE);
    let started = Instant::now();
    let result = runner
        .run(&Job::new("hi").timeout(Duration::from_millis(300)))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(result.timed_out && !result.ok);
    assert_eq!(result.text, "");
    assert_eq!(result.raw, None);
    assert_eq!(
        result.exit.signal,
        Some(9),
        "it ignores TERM, so KILL ended it"
    );
    assert!(out.read("signals").contains("term"), "TERM was sent first");
    assert!(
        took >= Duration::from_millis(500),
        "timeout, then a grace after TERM: {took:?}"
    );
    let pid = out.read("pid").trim().parse().unwrap();
    assert!(!exists(pid), "the process {pid} is reaped, not a zombie");
}

#[tokio::test]
async fn a_timeout_of_a_process_that_obeys_term_ends_it_with_term() {
    let out = Out::new();
    let result = runner("hang", &out, Duration::from_secs(5))
        .run(&Job::new("hi").timeout(Duration::from_millis(200)))
        .await
        .unwrap();
    assert!(result.timed_out);
    assert_eq!(result.exit.signal, Some(15));
}

#[tokio::test]
async fn the_prompt_goes_on_stdin_and_the_arguments_and_env_are_merged() {
    let out = Out::new();
    let cwd = tempfile::tempdir().unwrap();
    let defaults = Defaults::default()
        .program(fake::fake("inspect"))
        .env("OUT", out.path().display().to_string())
        .env("A", "default")
        .env("B", "default")
        .args(["--model", "m"]);
    let runner = ClaudeRunner::new(defaults.clone());
    let job = Job::new("--dangerously-skip-permissions is only text")
        .cwd(cwd.path())
        .args(["--max-turns=2"])
        .env("B", "call");
    let before = job.clone();
    let result = runner.run(&job).await.unwrap();
    assert!(result.ok, "{result:?}");
    assert_eq!(job, before, "the caller's job is unchanged");
    assert_eq!(runner.defaults(), &defaults, "the defaults are unchanged");
    assert_eq!(
        out.read("argv").lines().collect::<Vec<_>>(),
        [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "m",
            "--max-turns=2"
        ],
        "owned flags, then the defaults' arguments, then the call's; no prompt on argv"
    );
    let stdin: serde_json::Value = serde_json::from_str(&out.read("stdin")).unwrap();
    assert_eq!(
        stdin,
        serde_json::json!({"type":"user","message":{"role":"user","content":"--dangerously-skip-permissions is only text"}})
    );
    let home = std::env::var("HOME").unwrap_or_default();
    assert_eq!(
        out.read("env").trim(),
        format!("A=default B=call HOME={home}"),
        "the overlay lands on the parent environment, the call's last"
    );
    assert_eq!(
        std::fs::canonicalize(out.read("cwd").trim()).unwrap(),
        std::fs::canonicalize(cwd.path()).unwrap()
    );
}

#[tokio::test]
async fn a_program_that_cannot_start_is_a_spawn_error() {
    let runner = ClaudeRunner::new(Defaults::default().program("/nonexistent/claude"));
    match runner.run(&Job::new("hi")).await {
        Err(Error::Spawn { program, source }) => {
            assert_eq!(program, std::path::Path::new("/nonexistent/claude"));
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("a spawn error, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_input_is_refused_before_anything_is_spawned() {
    // The program does not exist: an InvalidInput proves nothing was tried.
    let runner = ClaudeRunner::new(Defaults::default().program("/nonexistent/claude"));
    let cases = [
        (
            Job::new("hi").args(["--output-format=json"]),
            "--output-format",
        ),
        (Job::new("hi").args(["-p"]), "-p"),
        (Job::new("hi").args(["--resume", "x"]), "--resume"),
        (Job::new("hi").args(["--continue"]), "--continue"),
        (Job::new("   "), "empty"),
        (Job::new("hi").cwd("/nonexistent/folder"), "not a directory"),
        (Job::new("hi").resume_session_id("--verbose"), "not a UUID"),
        (Job::new("hi").timeout(Duration::ZERO), "zero"),
        (Job::new("hi").env("A=B", "x"), "cannot be set"),
    ];
    for (job, says) in cases {
        match runner.run(&job).await {
            Err(Error::InvalidInput(message)) => {
                assert!(message.contains(says), "{message:?} says {says:?}")
            }
            other => panic!("{job:?}: invalid input, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn owned_flags_in_the_defaults_are_refused_too() {
    let runner = ClaudeRunner::new(
        Defaults::default()
            .program(fake::fake("job-ok"))
            .args(["--verbose"]),
    );
    assert!(matches!(
        runner.run(&Job::new("hi")).await,
        Err(Error::InvalidInput(_))
    ));
}
