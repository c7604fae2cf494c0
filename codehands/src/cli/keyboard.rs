//! The person's answers, line by line from stdin, for every question of one command (a
//! permission request during the run, then approve, reject, keep or a follow-up).
//!
//! One thread reads stdin for the whole process: each question takes the next line, so
//! no line typed for one question is swallowed by a reader left behind by another. The
//! thread is blocked in a read between questions and ends with the process, so
//! Ctrl-C (a tokio signal while a run is watched) still ends a question.
//!
//! It reads bytes (`codehands::client_lines`, the reader of every door a client writes to):
//! a line that is not UTF-8, or over [`MAX_LINE`], is refused on stderr and the next line is
//! read; only the end of input ends the answers.

use std::sync::OnceLock;

use codehands::client_lines::{ClientLines, Frame};

use tokio::sync::Mutex;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// The longest answer taken, 1 MiB: a follow-up pasted in is far shorter.
const MAX_LINE: usize = 1 << 20;

static LINES: OnceLock<Mutex<UnboundedReceiver<String>>> = OnceLock::new();

fn lines() -> &'static Mutex<UnboundedReceiver<String>> {
    LINES.get_or_init(|| {
        let (tx, rx) = unbounded_channel();
        std::thread::spawn(move || {
            // Blank lines are kept: an empty answer means the question's default.
            let mut stdin = ClientLines::new(std::io::stdin(), MAX_LINE).keeping_blank_lines();
            // At the end of input (or an unreadable stdin) the sender goes, and every
            // question from now on gets `None`.
            while let Some(frame) = stdin.next_blocking() {
                let line = match frame {
                    Frame::Line(line) => line,
                    Frame::NotUtf8(_) => {
                        eprintln!("codehands: that line is not UTF-8 text: type it again");
                        continue;
                    }
                    Frame::TooLong { bytes } => {
                        eprintln!(
                            "codehands: that line of {bytes} bytes is over the {MAX_LINE} bytes \
                             an answer may have: type a shorter one"
                        );
                        continue;
                    }
                };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Mutex::new(rx)
    })
}

/// The next line the person typed, without its line end; `None` once input has ended.
/// Cancel-safe: a line is taken only by a call that returns it.
pub async fn next_line() -> Option<String> {
    let mut rx = lines().lock().await;
    let line = rx.recv().await?;
    Some(line.trim_end_matches('\r').to_owned())
}

/// Drops the lines typed before a question was put (a late answer to a question that is
/// gone, which must not answer the next one).
pub fn discard_typed_ahead() {
    if let Some(lines) = LINES.get()
        && let Ok(mut rx) = lines.try_lock()
    {
        while rx.try_recv().is_ok() {}
    }
}
