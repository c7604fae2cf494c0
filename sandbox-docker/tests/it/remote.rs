//! The engine reached over TCP (as with `DOCKER_HOST=tcp://…`), through a
//! small relay in front of the real engine's socket that can drop kill
//! requests, so a kill that misses is a real miss seen by the client.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{BUSYBOX, boxes_of, request, sandbox, worktree};
use runner_contract::Sandbox;
use sandbox_docker::DockerSandbox;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};

/// A TCP relay to the engine's unix socket that cuts the connection of the
/// next `drop_kills` kill requests instead of passing them on.
struct Relay {
    host: String,
    dropped: Arc<AtomicUsize>,
}

async fn relay(drop_kills: usize) -> Relay {
    let socket = std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock"));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = format!("tcp://{}", listener.local_addr().unwrap());
    let dropped = Arc::new(AtomicUsize::new(0));
    let budget = Arc::new(AtomicUsize::new(drop_kills));
    let counter = dropped.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let (socket, budget, counter) = (socket.clone(), budget.clone(), counter.clone());
            tokio::spawn(async move {
                if let Ok(engine) = UnixStream::connect(&socket).await {
                    pipe(client, engine, budget, counter).await;
                }
            });
        }
    });
    Relay { host, dropped }
}

async fn pipe(
    client: TcpStream,
    engine: UnixStream,
    budget: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut engine_read, mut engine_write) = engine.into_split();
    let back = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut engine_read, &mut client_write).await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let is_kill = chunk.starts_with(b"POST ")
            && chunk
                .split(|b| *b == b'\n')
                .next()
                .is_some_and(|line| line.windows(5).any(|w| w == b"/kill"));
        if is_kill
            && budget
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
                .is_ok()
        {
            // The kill never reaches the engine: the client sees its connection cut.
            dropped.fetch_add(1, Ordering::SeqCst);
            break;
        }
        if engine_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    back.abort();
}

#[tokio::test]
async fn a_remote_engine_runs_the_tests() {
    let Some((_local, home)) = sandbox().await else {
        return;
    };
    let relay = relay(0).await;
    let remote = DockerSandbox::new(home.path()).with_docker_host(&relay.host);
    assert!(
        remote.available().await,
        "the engine answers at {}",
        relay.host
    );
    let repo = worktree(&[("t.sh", "echo over-tcp")]);
    let result = remote
        .run_tests(&request(repo.path(), "sh t.sh", BUSYBOX))
        .await;
    assert!(result.passed, "{result:?}");
    assert!(
        result.output.contains("over-tcp"),
        "attached output crosses the relay: {result:?}"
    );
}

#[tokio::test]
async fn nothing_is_left_when_the_kill_misses_once() {
    let Some((_local, home)) = sandbox().await else {
        return;
    };
    let relay = relay(1).await;
    let remote = DockerSandbox::new(home.path()).with_docker_host(&relay.host);
    let repo = worktree(&[]);
    let mut req = request(repo.path(), "sleep 600", BUSYBOX);
    req.limits.timeout_secs = 1;
    let result = remote.run_tests(&req).await;
    assert_eq!(
        relay.dropped.load(Ordering::SeqCst),
        1,
        "the first kill was lost"
    );
    assert!(result.timed_out, "{result:?}");
    assert!(!result.passed);
    assert!(
        boxes_of(&req.session_id).await.is_empty(),
        "the box is gone all the same"
    );
}

#[tokio::test]
async fn nothing_is_left_when_every_kill_misses() {
    let Some((_local, home)) = sandbox().await else {
        return;
    };
    let relay = relay(usize::MAX).await;
    let remote = DockerSandbox::new(home.path()).with_docker_host(&relay.host);
    let repo = worktree(&[]);
    let mut req = request(repo.path(), "sleep 600", BUSYBOX);
    req.limits.timeout_secs = 1;
    let result = remote.run_tests(&req).await;
    assert!(relay.dropped.load(Ordering::SeqCst) >= 1, "kills were lost");
    assert!(result.timed_out, "{result:?}");
    assert!(
        boxes_of(&req.session_id).await.is_empty(),
        "forced removal still stops it"
    );
}
