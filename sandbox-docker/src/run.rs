//! One box from create to removal: attach, start, wait with a time limit, kill
//! through the engine, read what happened, and make sure nothing is left.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::errors::Error as DockerError;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, KillContainerOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures::StreamExt;

use crate::output::TailBuffer;

/// What a box did.
#[derive(Debug)]
pub(crate) struct BoxOutcome {
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    pub out_of_memory: bool,
    pub output: String,
}

/// Runs one box to its end. An `Err` means the box itself broke (it could not
/// be created or started), with the engine's words; the container is gone
/// either way, also when this future is dropped half-way.
pub(crate) async fn run_box(
    docker: &Docker,
    name: &str,
    body: ContainerCreateBody,
    timeout: Duration,
    output_cap: usize,
) -> Result<BoxOutcome, String> {
    // A container of this name can only be a leftover of a crashed run: it must
    // never be mistaken for ours, so it goes before anything starts.
    ensure_gone(docker, name).await?;
    let guard = RemoveOnDrop {
        docker: docker.clone(),
        name: name.to_owned(),
        armed: true,
    };
    let outcome = run_created(docker, name, body, timeout, output_cap).await;
    let removed = ensure_gone(docker, name).await;
    guard.disarm();
    let outcome = outcome?;
    removed?;
    Ok(outcome)
}

async fn run_created(
    docker: &Docker,
    name: &str,
    body: ContainerCreateBody,
    timeout: Duration,
    output_cap: usize,
) -> Result<BoxOutcome, String> {
    let create = CreateContainerOptionsBuilder::default().name(name).build();
    docker
        .create_container(Some(create), body)
        .await
        .map_err(|e| {
            format!(
                "the engine could not create the box {name}: {}",
                engine_message(&e)
            )
        })?;
    // Attach before starting, so not one byte of output is missed.
    let attach = AttachContainerOptionsBuilder::default()
        .stdout(true)
        .stderr(true)
        .stream(true)
        .build();
    let mut attached = docker
        .attach_container(name, Some(attach))
        .await
        .map_err(|e| {
            format!(
                "the engine could not attach to the box {name}: {}",
                engine_message(&e)
            )
        })?;
    // Shared, so what was read is kept even when the stream has to be cut off.
    let tail = Arc::new(Mutex::new(TailBuffer::new(output_cap)));
    let sink = tail.clone();
    let mut reader = tokio::spawn(async move {
        while let Some(Ok(chunk)) = attached.output.next().await {
            match chunk {
                LogOutput::StdOut { message }
                | LogOutput::StdErr { message }
                | LogOutput::Console { message } => sink
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&message),
                LogOutput::StdIn { .. } => {}
            }
        }
    });
    if let Err(e) = docker.start_container(name, None).await {
        reader.abort();
        return Err(format!(
            "the engine could not start the box {name}: {}",
            engine_message(&e)
        ));
    }
    let waited = tokio::time::timeout(timeout, docker.wait_container(name, None).next()).await;
    let timed_out = waited.is_err();
    if let Ok(Some(Err(e))) = &waited
        && !matches!(e, DockerError::DockerContainerWaitError { .. })
    {
        tracing::warn!(box = name, error = %e, "waiting for the box failed; reading its state instead");
    }
    // Killing our client would not stop the container: the engine must.
    let stopped = !timed_out || kill(docker, name).await;
    if timed_out && stopped {
        let mut exited = docker.wait_container(name, None);
        let _ = tokio::time::timeout(Duration::from_secs(10), exited.next()).await;
    }
    // The stream ends when the container exits; bound the wait in case the
    // engine keeps the connection open, or the box still runs (every kill missed).
    let grace = if stopped {
        Duration::from_secs(10)
    } else {
        Duration::from_millis(200)
    };
    if tokio::time::timeout(grace, &mut reader).await.is_err() {
        reader.abort();
    }
    let output = std::mem::replace(
        &mut *tail.lock().unwrap_or_else(|e| e.into_inner()),
        TailBuffer::new(0),
    );
    let state = docker
        .inspect_container(name, None)
        .await
        .map_err(|e| format!("the engine lost the box {name}: {}", engine_message(&e)))?
        .state
        .unwrap_or_default();
    if state.running == Some(true) && !timed_out {
        // The wait broke off while the box still runs: its exit code would be a lie.
        // (A timed-out box may still run when every kill missed: removal with force follows.)
        kill(docker, name).await;
        return Err(format!(
            "lost track of the box {name} while it was running; run the tests again"
        ));
    }
    Ok(BoxOutcome {
        exit_code: if timed_out { None } else { state.exit_code },
        timed_out,
        out_of_memory: state.oom_killed.unwrap_or(false),
        output: output.into_string(),
    })
}

/// Sends SIGKILL through the engine; when that misses (a lost request, a
/// paused box), unpauses and tries again. Says whether a kill landed; removal
/// with force follows in any case.
async fn kill(docker: &Docker, name: &str) -> bool {
    let options = || {
        Some(
            KillContainerOptionsBuilder::default()
                .signal("KILL")
                .build(),
        )
    };
    for _ in 0..3 {
        match docker.kill_container(name, options()).await {
            Ok(()) => return true,
            Err(e) => {
                tracing::warn!(box = name, error = %e, "killing the box missed; trying again");
                let _ = docker.unpause_container(name).await;
            }
        }
    }
    false
}

/// Removes the box (killing it if needed) and checks that the engine no longer
/// knows it; tries a few times, since a kill or removal can miss.
pub(crate) async fn ensure_gone(docker: &Docker, name: &str) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..5u64 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
        }
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match docker.remove_container(name, Some(options)).await {
            Ok(())
            | Err(DockerError::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => {
                last = engine_message(&e);
                // A paused box cannot be removed on some engines: thaw it first.
                let _ = docker.unpause_container(name).await;
                kill(docker, name).await;
                continue;
            }
        }
        match docker.inspect_container(name, None).await {
            Err(DockerError::DockerResponseServerError {
                status_code: 404, ..
            }) => return Ok(()),
            Ok(_) => last = "it is still there after removal".into(),
            Err(e) => last = engine_message(&e),
        }
    }
    Err(format!(
        "the box {name} could not be removed: {last}; remove it with `docker rm -f {name}`"
    ))
}

/// The engine's own message when there is one, without bollard's wrapping.
pub(crate) fn engine_message(e: &DockerError) -> String {
    match e {
        DockerError::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Removes the box when a run is dropped half-way (its caller gave up), so a
/// cancelled run leaves nothing behind either.
struct RemoveOnDrop {
    docker: Docker,
    name: String,
    armed: bool,
}

impl RemoveOnDrop {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (docker, name) = (self.docker.clone(), std::mem::take(&mut self.name));
            handle.spawn(async move {
                let _ = ensure_gone(&docker, &name).await;
            });
        }
    }
}
