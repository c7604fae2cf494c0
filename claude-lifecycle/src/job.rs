//! One-shot jobs: one prompt on stdin, stdin closed, the result line read at the end.

use runner_contract::framing::{Frame, JsonlDecoder};
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::error::Result;
use crate::message;
use crate::options::ResolvedConfig;
use crate::process::{self, ExitInfo};

/// How much of stderr a result keeps: the end, where the reason usually is.
const STDERR_TAIL: usize = 16 << 10;

/// What a job gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RunResult {
    /// Exit code 0 and a result line without `is_error`.
    pub ok: bool,
    /// The result's text; the whole stdout when there was no result line; empty on timeout.
    pub text: String,
    /// The result line, when there was one (`None` on timeout).
    pub raw: Option<Value>,
    /// How the process ended.
    pub exit: ExitInfo,
    /// True when the wall-clock limit ended the job.
    pub timed_out: bool,
    /// The end of what Claude wrote to stderr (diagnostic).
    pub stderr: String,
}

/// Runs `config` with `prompt` to its end (or its timeout), and reaps it.
pub(crate) async fn run(config: &ResolvedConfig, prompt: &str) -> Result<RunResult> {
    let spawned = process::spawn(config)?;
    let owner = spawned.owner;
    let mut stdin = spawned.stdin;
    let line = message::user_line(prompt, None);
    // Written in the background: a prompt bigger than the pipe must not hold up reading.
    // Stdin is closed once written, so Claude ends after the one turn.
    tokio::spawn(async move {
        if let Err(e) = stdin.write_all(&line).await {
            tracing::debug!("the prompt was not written whole: {e}");
        }
    });
    let (stdout, stdout_task) = process::collect(spawned.stdout, usize::MAX);
    let (stderr, stderr_task) = process::collect(spawned.stderr, STDERR_TAIL);
    let grace = config.shutdown_grace;
    let (exit, timed_out) = match config.timeout {
        Some(limit) => match owner.exited_within(limit).await {
            Some(exit) => (exit, false),
            None => {
                tracing::debug!(?limit, "the job timed out: ending Claude");
                (owner.terminate(grace).await, true)
            }
        },
        None => (owner.exited().await, false),
    };
    process::drain(vec![stdout_task, stderr_task], grace).await;
    let stdout = std::mem::take(&mut *stdout.lock().unwrap_or_else(|p| p.into_inner()));
    let stderr = std::mem::take(&mut *stderr.lock().unwrap_or_else(|p| p.into_inner()));
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    if timed_out {
        return Ok(RunResult {
            ok: false,
            text: String::new(),
            raw: None,
            exit,
            timed_out,
            stderr,
        });
    }
    Ok(match last_result(&stdout) {
        Some(raw) => {
            let result = message::turn_result(raw);
            RunResult {
                ok: result.ok && exit.success(),
                text: result.text,
                raw: Some(result.raw),
                exit,
                timed_out,
                stderr,
            }
        }
        None => RunResult {
            ok: false,
            text: String::from_utf8_lossy(&stdout).trim().to_owned(),
            raw: None,
            exit,
            timed_out,
            stderr,
        },
    })
}

/// The last `result` line of the output, if any.
fn last_result(stdout: &[u8]) -> Option<Value> {
    let mut decoder = JsonlDecoder::new();
    let mut frames = Vec::new();
    decoder.push(stdout, &mut frames);
    decoder.finish(&mut frames);
    frames
        .into_iter()
        .filter_map(|frame| match frame {
            Frame::Line(line) => serde_json::from_str::<Value>(&line).ok(),
            _ => None,
        })
        .rfind(|value| value.get("type").and_then(Value::as_str) == Some("result"))
}
