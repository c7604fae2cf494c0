//! Logs: on stderr (`RUST_LOG`, else `warn` raised by each `-v`), and, for `run` and
//! `resume`, the runner's own log of the run in `runs/<sessionId>/codehands.log` (at `info`,
//! whatever stderr shows), kept beside the transcript so a failure can be read later.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use runner_contract::{Home, SessionId};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The run's log file, once the session is known.
static RUN_LOG: OnceLock<Mutex<std::fs::File>> = OnceLock::new();

/// The name of the runner's log in a session's run folder.
pub const RUN_LOG_FILE: &str = runner_contract::run_folder::RUN_LOG;

/// Installs the subscriber: stderr at `verbose`'s level (or `RUST_LOG`), the run's file at
/// `info`.
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let stderr_filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(stderr_filter);
    let file = tracing_subscriber::fmt::layer()
        .with_writer(|| RunLogWriter)
        .with_ansi(false)
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    // `CODEHANDS_TIMING`: the run's spans to a file, for the benchmarks (codehands::timing).
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .with(codehands::timing::layer_from_env())
        .try_init();
}

/// From now on, the log also goes to `runs/<id>/codehands.log` (private, appended; never
/// through a link). A file that cannot be opened is said once on stderr, and the run goes on.
pub fn log_run_to(home: &Home, id: &SessionId) {
    let path = home.run_dir(id).join(RUN_LOG_FILE);
    match home.private().append(&path) {
        Ok(file) => {
            let _ = RUN_LOG.set(Mutex::new(file));
        }
        Err(e) => eprintln!("codehands: the run's log is not kept: {e}"),
    }
}

/// Writes to the run's file when there is one, else nowhere.
struct RunLogWriter;

impl Write for RunLogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match RUN_LOG.get() {
            Some(file) => file.lock().unwrap_or_else(|e| e.into_inner()).write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match RUN_LOG.get() {
            Some(file) => file.lock().unwrap_or_else(|e| e.into_inner()).flush(),
            None => Ok(()),
        }
    }
}
