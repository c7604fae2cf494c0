//! The tasks of one session: the writer (the only one that touches stdin, so inputs go out
//! in the order they were sent), the readers of stdout and stderr, and the supervisor that
//! sees the process to its end.

use std::sync::Arc;
use std::time::Duration;

use runner_contract::framing::{Frame, JsonlDecoder};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::shared::Shared;
use crate::error::{Error, Result};
use crate::message;
use crate::process::{self, Owner};

/// One line waiting to be written, and who waits for it.
pub(crate) struct Write {
    pub line: Vec<u8>,
    /// A user message (the session is busy from its write on); false for a control request.
    pub starts_turn: bool,
    pub reply: oneshot::Sender<Result<()>>,
}

/// Resolves once the caller has closed the session or dropped it (which is a close too).
async fn closed(closing: &mut watch::Receiver<bool>) {
    // The borrow the wait gives back is let go here, before anything else awaits.
    let _ = closing.wait_for(|closing| *closing).await;
}

/// Resolves once the session is closed or the process has exited.
async fn stopped(closing: &mut watch::Receiver<bool>, owner: &Owner) {
    tokio::select! {
        () = closed(closing) => {}
        _ = owner.exited() => {}
    }
}

/// Writes queued inputs one at a time; once stopped, refuses what is still queued and
/// closes stdin (dropping it is what Claude reads as the end of its input).
pub(crate) fn writer(
    mut stdin: ChildStdin,
    mut queue: mpsc::UnboundedReceiver<Write>,
    mut closing: watch::Receiver<bool>,
    owner: Owner,
    shared: Arc<Shared>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let write = tokio::select! {
                biased;
                () = stopped(&mut closing, &owner) => break,
                write = queue.recv() => match write {
                    Some(write) => write,
                    None => break,
                },
            };
            shared.writing(write.starts_turn);
            let written = tokio::select! {
                biased;
                () = stopped(&mut closing, &owner) => {
                    let _ = write.reply.send(Err(Error::Closed));
                    break;
                }
                written = async {
                    stdin.write_all(&write.line).await?;
                    stdin.flush().await
                } => written,
            };
            let _ = write.reply.send(written.map_err(Error::Write));
        }
        queue.close();
        while let Ok(write) = queue.try_recv() {
            let _ = write.reply.send(Err(Error::Closed));
        }
        drop(stdin);
    })
}

/// Cuts a pipe into lines with runner-contract's decoder and hands each frame to `each`.
async fn frames<R: AsyncRead + Unpin>(mut pipe: R, mut each: impl FnMut(Frame)) {
    let mut decoder = JsonlDecoder::new();
    let mut frames = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = pipe.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            decoder.finish(&mut frames);
        } else {
            decoder.push(&chunk[..n], &mut frames);
        }
        frames.drain(..).for_each(&mut each);
        if n == 0 {
            return;
        }
    }
}

/// Decodes stdout into events.
pub(crate) fn stdout_reader<R>(pipe: R, shared: Arc<Shared>) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(frames(pipe, move |frame| {
        shared.read(message::event_of(frame));
    }))
}

/// Passes stderr on line by line.
pub(crate) fn stderr_reader<R>(pipe: R, shared: Arc<Shared>) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(frames(pipe, move |frame| {
        shared.stderr(frame.text().into_owned());
    }))
}

/// Sees the process to its end: by itself, or by the caller's close (stdin ended, `grace`,
/// SIGTERM, `grace`, SIGKILL). Then reads what is left of its output, for `grace` at most,
/// and records the end.
pub(crate) fn supervisor(
    owner: Owner,
    mut closing: watch::Receiver<bool>,
    writer: JoinHandle<()>,
    readers: Vec<JoinHandle<()>>,
    grace: Duration,
    shared: Arc<Shared>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (exit, by_caller) = tokio::select! {
            exit = owner.exited() => (exit, false),
            () = closed(&mut closing) => {
                // The writer refuses what is queued and drops stdin as soon as it sees the close.
                let _ = tokio::time::timeout(grace, writer).await;
                tracing::debug!("stdin closed: waiting {grace:?} for Claude to exit");
                let exit = match owner.exited_within(grace).await {
                    Some(exit) => exit,
                    None => owner.terminate(grace).await,
                };
                (exit, true)
            }
        };
        process::drain(readers, grace).await;
        shared.ended(exit, by_caller);
    })
}
