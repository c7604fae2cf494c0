//! Beyond the seed: what the locks hold against, seen from inside a real box.

use crate::common;

use std::time::Duration;

use common::{BUSYBOX, DEBIAN, boxes_of, request, sandbox, worktree};
use runner_contract::Sandbox;

#[tokio::test]
async fn no_privileges_inside() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let script = "grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd)' /proc/self/status; echo uid=$(id -u); \
                  echo init=$(cat /proc/1/comm); echo pids=$(cat /sys/fs/cgroup/pids/pids.max); \
                  echo mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); \
                  echo memsw=$(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes); \
                  echo nofile=$(ulimit -n); df -k /tmp | tail -1";
    let result = sandbox
        .run_tests(&request(repo.path(), script, BUSYBOX))
        .await;
    assert!(result.passed, "{result:?}");
    let out = &result.output;
    for expected in [
        "NoNewPrivs:\t1",
        "CapEff:\t0000000000000000",
        "CapPrm:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "init=docker-init",
        "pids=256",
        "mem=1073741824",
        "memsw=1073741824",
        "nofile=1024",
        " 65536 ",
    ] {
        assert!(out.contains(expected), "{expected:?} in {out}");
    }
    assert!(!out.contains("uid=0"), "not root: {out}");
}

#[tokio::test]
async fn a_fork_bomb_is_contained() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let mut req = request(
        repo.path(),
        "bomb() { bomb | bomb & }; bomb; sleep 4; echo still-here",
        BUSYBOX,
    );
    req.limits.timeout_secs = 8;
    let result = sandbox.run_tests(&req).await;
    assert!(
        result.output.contains("can't fork"),
        "forks hit the process limit: {result:?}"
    );
    assert!(
        boxes_of(&req.session_id).await.is_empty(),
        "every process went with the box"
    );
    // The host still forks.
    assert!(
        std::process::Command::new("true")
            .status()
            .unwrap()
            .success()
    );
}

#[tokio::test]
async fn an_orphaned_grandchild_is_reaped() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    // The subshell exits at once, orphaning `sleep`: it is adopted by pid 1,
    // and once it exits no zombie stays (a zombie keeps its /proc entry).
    let script = "(sleep 1 & echo $! > /tmp/orphan); pid=$(cat /tmp/orphan); \
                  grep PPid /proc/$pid/status; sleep 2; \
                  if [ -e /proc/$pid ]; then grep State /proc/$pid/status; exit 1; fi; echo reaped";
    let result = sandbox
        .run_tests(&request(repo.path(), script, BUSYBOX))
        .await;
    assert!(
        result.output.contains("PPid:\t1\n"),
        "adopted by the init: {result:?}"
    );
    assert!(
        result.passed && result.output.contains("reaped"),
        "{result:?}"
    );
}

/// The resident memory of this test process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

#[tokio::test]
async fn yes_is_capped_and_our_memory_stays_flat() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let req = request(repo.path(), "yes | head -c 300000000", BUSYBOX);
    // Warm up once so the client's own buffers are counted before, not during.
    let _ = sandbox
        .run_tests(&request(repo.path(), "yes | head -c 1000000", BUSYBOX))
        .await;
    let before = rss();
    let result = sandbox.run_tests(&req).await;
    let grown = rss().saturating_sub(before);
    assert!(result.passed, "{:?}", result.error);
    assert_eq!(result.output.len(), 64 * 1024, "capped at 64 KB of 300 MB");
    assert!(result.output.chars().all(|c| c == 'y' || c == '\n'));
    assert!(
        grown < 32 << 20,
        "300 MB of output grew our memory by {} MB",
        grown >> 20
    );
}

#[tokio::test]
async fn the_time_limit_holds_against_a_busy_box() {
    let Some((sandbox, _home)) = sandbox().await else {
        return;
    };
    let repo = worktree(&[]);
    let mut req = request(repo.path(), "node -e 'for(;;){}'", DEBIAN);
    req.limits.timeout_secs = 2;
    let started = std::time::Instant::now();
    let result = sandbox.run_tests(&req).await;
    assert!(result.timed_out, "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(boxes_of(&req.session_id).await.is_empty());
}
