//! The person's answers, line by line from stdin, for every question of one command (a
//! permission request during the run, then approve, reject, keep or a follow-up).
//!
//! One thread reads stdin for the whole process: each question takes the next line, so
//! no line typed for one question is swallowed by a reader left behind by another. The
//! thread is blocked in `read_line` between questions and ends with the process, so
//! Ctrl-C (a tokio signal while a run is watched) still ends a question.

use std::io::BufRead;
use std::sync::OnceLock;

use tokio::sync::Mutex;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

static LINES: OnceLock<Mutex<UnboundedReceiver<String>>> = OnceLock::new();

fn lines() -> &'static Mutex<UnboundedReceiver<String>> {
    LINES.get_or_init(|| {
        let (tx, rx) = unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                match stdin.lock().read_line(&mut line) {
                    Ok(n) if n > 0 => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                    // End of input (or an unreadable stdin): the sender goes, and every
                    // question from now on gets `None`.
                    _ => return,
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
    Some(line.trim_end_matches(['\n', '\r']).to_owned())
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
