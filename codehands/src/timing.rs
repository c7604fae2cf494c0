//! Where a run's time goes, for `cargo xtask bench run` and `bench check`.
//!
//! The runner marks each step of a run with a tracing span (`start.worktree`,
//! `turn.spawn`, `turn.first_output` …; ARCHITECTURE.md, "Speed", lists them). With
//! `CODEHANDS_TIMING=FILE` in its environment, every `codehands` process of the run (the
//! command, its detached supervisor) appends one line per closed span to FILE:
//! `{"name":"start.worktree","pid":123,"startUs":…,"endUs":…}`, wall-clock microseconds since
//! the Unix epoch, so the spans of several processes line up with each other and with the
//! moment the benchmark started the command. Without the variable no layer is installed and
//! the spans cost a disabled callsite each.
//!
//! `CODEHANDS_PLANT_SLOWDOWN_PCT=N` makes `codehands run` N% slower: it waits N% of its own
//! time (from `main` on) before it exits. The planted regression that shows `cargo xtask
//! bench check` fails on one, whatever the load of the machine that runs it. Only a build
//! with the `bench-hooks` feature (off by default, never shipped) reads the variable.

use std::io::Write;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::Subscriber;
use tracing::span::{Attributes, Id};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The variable that names the file the spans go to.
pub const TIMING_ENV: &str = "CODEHANDS_TIMING";

/// The variable that plants a slowdown in `codehands run` (percent), for the gate's test;
/// read only by a build with the `bench-hooks` feature.
pub const PLANT_SLOWDOWN_ENV: &str = "CODEHANDS_PLANT_SLOWDOWN_PCT";

/// When `main` began, once [`mark_process_start`] has been called.
static PROCESS_START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Notes that `main` begins (the planted slowdown is a share of the time from here).
pub fn mark_process_start() {
    PROCESS_START.get_or_init(std::time::Instant::now);
}

/// A layer that writes every closed span to the file `CODEHANDS_TIMING` names; `None` when
/// the variable is unset or the file cannot be opened (timing is never worth failing a run).
pub fn layer_from_env() -> Option<TimingLayer> {
    let path = std::env::var_os(TIMING_ENV)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()?;
    Some(TimingLayer {
        file: Mutex::new(file),
        pid: std::process::id(),
    })
}

/// The wait `CODEHANDS_PLANT_SLOWDOWN_PCT` asks for now, if any: its share of the time since
/// [`mark_process_start`] (or since the first call, when it was not called). Only in a
/// build with the `bench-hooks` feature.
#[cfg(feature = "bench-hooks")]
pub fn planted_slowdown() -> Option<std::time::Duration> {
    let percent: u32 = std::env::var(PLANT_SLOWDOWN_ENV).ok()?.parse().ok()?;
    let since = PROCESS_START.get_or_init(std::time::Instant::now).elapsed();
    (percent > 0).then(|| since.mul_f64(f64::from(percent) / 100.0))
}

/// Writes spans to a file (see the module's documentation).
#[derive(Debug)]
pub struct TimingLayer {
    file: Mutex<std::fs::File>,
    pid: u32,
}

/// When a span was entered first, kept in its extensions.
struct Started(u128);

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

impl<S> Layer<S> for TimingLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Started(now_us()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(start) = span.extensions().get::<Started>().map(|s| s.0) else {
            return;
        };
        let line = format!(
            "{{\"name\":\"{}\",\"pid\":{},\"startUs\":{start},\"endUs\":{}}}\n",
            span.name(),
            self.pid,
            now_us()
        );
        // One write per line, in append mode: lines of several processes never interleave.
        let _ = self
            .file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn a_closed_span_is_one_line_with_its_name_and_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timing.jsonl");
        let layer = TimingLayer {
            file: Mutex::new(std::fs::File::create(&path).unwrap()),
            pid: 7,
        };
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let _outer = tracing::trace_span!("start.worktree").entered();
            std::thread::sleep(std::time::Duration::from_millis(2));
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["name"], "start.worktree");
        assert_eq!(line["pid"], 7);
        let took = line["endUs"].as_u64().unwrap() - line["startUs"].as_u64().unwrap();
        assert!(took >= 2000, "the span lasted the 2 ms slept: {took} us");
    }
}
