//! The Claude process: spawned, owned until it is reaped and signalled through the process
//! layer's owned child (`runner_process::owned`); its pipes read here.
//!
//! Only the parent process is ever signalled: its descendants are Claude's business (the
//! spec's rule; Claude ends its own tools).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner_process::owned::{OwnedChild, OwnedCommand};
use tokio::io::AsyncReadExt;

use crate::error::{Error, Result};
use crate::options::ResolvedConfig;

pub use runner_process::owned::{ExitInfo, Owner};

/// Starts `config` with the parent environment plus its overlay, through the process
/// layer's owned child (the caller's process group, only the parent signalled).
pub(crate) fn spawn(config: &ResolvedConfig) -> Result<OwnedChild> {
    let spawned = runner_process::owned::spawn(OwnedCommand {
        program: &config.program,
        args: &config.argv,
        env: &config.env.0,
        cwd: config.cwd.as_deref(),
    })
    .map_err(|source| Error::Spawn {
        program: config.program.clone(),
        source,
    })?;
    tracing::debug!(program = %config.program.display(), pid = spawned.owner.pid(), "spawned Claude");
    Ok(spawned)
}

/// Reads a pipe to its end into a shared buffer, keeping its last `cap` bytes. The buffer
/// is shared so what was read survives an abort (a descendant of Claude may hold the pipe
/// open after Claude has exited, and draining is bounded).
pub(crate) fn collect<R>(
    mut pipe: R,
    cap: usize,
) -> (Arc<Mutex<Vec<u8>>>, tokio::task::JoinHandle<()>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let shared = buffer.clone();
    let task = tokio::spawn(async move {
        let mut chunk = vec![0u8; 64 << 10];
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            let mut buffer = shared.lock().unwrap_or_else(|p| p.into_inner());
            buffer.extend_from_slice(&chunk[..n]);
            // The end is what says why a run failed.
            if buffer.len() > cap {
                let cut = buffer.len() - cap;
                buffer.drain(..cut);
            }
        }
    });
    (buffer, task)
}

/// Waits up to `grace` for the reading tasks, then aborts those still reading.
pub(crate) async fn drain(tasks: Vec<tokio::task::JoinHandle<()>>, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    for mut task in tasks {
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            tracing::debug!("output still open {grace:?} after exit: no longer read");
            task.abort();
        }
    }
}
