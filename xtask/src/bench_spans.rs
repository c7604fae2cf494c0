//! Where a `codehands run` spends its time, from the spans its processes write to the file
//! `CODEHANDS_TIMING` names (codehands::timing): one run's spans, and the breakdown of many
//! runs as medians. `bench run` prints it; `bench check` gates on its total.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One closed span of one process.
#[derive(Debug, Clone)]
pub struct Span {
    pub name: String,
    pub pid: u32,
    pub start_us: u128,
    pub end_us: u128,
}

/// One run timed from outside (when it was started and when it exited, wall clock) and from
/// inside (its processes' spans).
#[derive(Debug, Clone)]
pub struct TimedRun {
    pub spawned_us: u128,
    pub exited_us: u128,
    pub wall: Duration,
    pub spans: Vec<Span>,
}

/// Runs `cmd` to its end with `CODEHANDS_TIMING` set to `file` (a fresh file), and reads
/// the spans its processes wrote.
pub fn timed_run(mut cmd: Command, file: &Path) -> Result<TimedRun, String> {
    let _ = std::fs::remove_file(file);
    cmd.env("CODEHANDS_TIMING", file);
    let spawned_us = now_us();
    let started = Instant::now();
    let status = cmd.status().map_err(|e| e.to_string())?;
    let wall = started.elapsed();
    let exited_us = now_us();
    if !status.success() {
        return Err(format!("{cmd:?} failed: {status}"));
    }
    // The detached supervisor writes its last spans after the command saw the turn's end:
    // give it a moment (outside the timing) to close them.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut spans = read_spans(file)?;
    while !spans.iter().any(|s| s.name == "supervise.turn") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        spans = read_spans(file)?;
    }
    Ok(TimedRun {
        spawned_us,
        exited_us,
        wall,
        spans,
    })
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// The spans in `file` (none when it is not there).
pub fn read_spans(file: &Path) -> Result<Vec<Span>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
                format!(
                    "{}: a line that is not a span ({e}): {line}",
                    file.display()
                )
            })?;
            Ok(Span {
                name: v["name"].as_str().unwrap_or_default().to_owned(),
                pid: v["pid"].as_u64().unwrap_or_default() as u32,
                start_us: v["startUs"].as_u64().unwrap_or_default().into(),
                end_us: v["endUs"].as_u64().unwrap_or_default().into(),
            })
        })
        .collect()
}

impl TimedRun {
    fn first(&self, name: &str) -> Option<&Span> {
        self.spans.iter().find(|s| s.name == name)
    }

    /// The `process` span of the process that also wrote `marker`.
    fn process_of(&self, marker: &str) -> Option<&Span> {
        let pid = self.first(marker)?.pid;
        self.spans
            .iter()
            .find(|s| s.name == "process" && s.pid == pid)
    }

    /// The run's steps in milliseconds, in the order they happen: each span's own duration
    /// (the first of its name: one turn), and the gaps between processes that no span
    /// covers (a process's start, the supervisor's launch, the end reaching the command).
    pub fn steps(&self) -> Vec<(String, f64)> {
        let ms = |us: i128| us as f64 / 1000.0;
        let gap = |from: u128, to: u128| ms(to as i128 - from as i128);
        let mut steps = Vec::new();
        let command = self.process_of("run.setup");
        let supervisor = self.process_of("supervise.turn");
        if let Some(command) = command {
            steps.push((
                "command: exec to main (loader, args, logging)".into(),
                gap(self.spawned_us, command.start_us),
            ));
        }
        for name in ["run.setup", "run.start"] {
            self.push_span(&mut steps, name);
        }
        for name in [
            "start.check",
            "start.base_commit",
            "start.run_files",
            "start.record",
            "start.worktree",
            "start.launch",
        ] {
            self.push_span(&mut steps, &format!("  {name}"));
        }
        if let (Some(launch), Some(supervisor)) = (self.first("start.launch"), supervisor) {
            steps.push((
                "supervisor: launch to main (exec, loader)".into(),
                gap(launch.start_us, supervisor.start_us),
            ));
        }
        for name in [
            "supervise.setup",
            "turn.load",
            "turn.prepare",
            "turn.confine",
            "turn.exec",
            "turn.first_output",
            "turn.agent",
            "turn.end",
            "turn.diff",
        ] {
            self.push_span(&mut steps, name);
        }
        if let (Some(end), Some(follow)) = (self.first("turn.end"), self.first("run.follow")) {
            steps.push((
                "turn's end to the command's last event".into(),
                gap(end.end_us, follow.end_us),
            ));
        }
        if let (Some(start), Some(first)) = (self.first("run.start"), self.first("run.first_event"))
        {
            steps.push((
                "session started to first event seen".into(),
                gap(start.end_us, first.end_us),
            ));
        }
        if let Some(command) = command {
            steps.push((
                "command: last span to exit".into(),
                gap(command.end_us, self.exited_us),
            ));
        }
        steps
    }

    fn push_span(&self, steps: &mut Vec<(String, f64)>, label: &str) {
        if let Some(span) = self.first(label.trim()) {
            steps.push((
                label.to_owned(),
                (span.end_us as i128 - span.start_us as i128) as f64 / 1000.0,
            ));
        }
    }
}

/// The median of each step over `runs`, in the order of the first run's steps.
pub fn breakdown(runs: &[TimedRun]) -> Vec<(String, f64)> {
    let mut order = Vec::new();
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (name, ms) in run.steps() {
            if !values.contains_key(&name) {
                order.push(name.clone());
            }
            values.entry(name).or_default().push(ms);
        }
    }
    order
        .into_iter()
        .map(|name| {
            let median = middle(values.remove(&name).unwrap_or_default());
            (name, median)
        })
        .collect()
}

/// Prints a breakdown under `title`.
pub fn print_breakdown(title: &str, steps: &[(String, f64)]) {
    println!("{title}");
    for (name, ms) in steps {
        println!("  {name:<52} {ms:>8.2} ms");
    }
}

/// The median of `values` (the upper one of an even count).
pub fn middle(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The lower quartile of `values` (0 when there are none): the gate's statistic, as a
/// loaded machine only ever adds time to a round (`bench_check.rs`).
pub fn lower_quartile(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * 0.25).round() as usize]
}

/// Half the interquartile range of `values`: the spread printed beside a median.
pub fn half_iqr(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.75) - at(0.25)) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, pid: u32, start_us: u128, end_us: u128) -> Span {
        Span {
            name: name.into(),
            pid,
            start_us,
            end_us,
        }
    }

    #[test]
    fn the_steps_of_a_run_are_its_spans_and_the_gaps_between_its_processes() {
        let run = TimedRun {
            spawned_us: 1_000,
            exited_us: 60_000,
            wall: Duration::from_millis(59),
            spans: vec![
                span("run.setup", 1, 4_000, 5_000),
                span("start.launch", 1, 9_000, 10_000),
                span("run.start", 1, 5_000, 10_000),
                span("supervise.setup", 2, 13_000, 14_000),
                span("turn.end", 2, 40_000, 45_000),
                span("supervise.turn", 2, 14_000, 46_000),
                span("process", 2, 12_000, 47_000),
                span("run.first_event", 1, 10_000, 20_000),
                span("run.follow", 1, 10_000, 50_000),
                span("process", 1, 3_000, 55_000),
            ],
        };
        let steps: BTreeMap<String, f64> = run.steps().into_iter().collect();
        assert_eq!(steps["command: exec to main (loader, args, logging)"], 2.0);
        assert_eq!(steps["run.start"], 5.0);
        assert_eq!(steps["  start.launch"], 1.0);
        assert_eq!(steps["supervisor: launch to main (exec, loader)"], 3.0);
        assert_eq!(steps["turn's end to the command's last event"], 5.0);
        assert_eq!(steps["session started to first event seen"], 10.0);
        assert_eq!(steps["command: last span to exit"], 5.0);
    }

    #[test]
    fn the_breakdown_is_the_median_of_each_step() {
        let run = |setup_ms: u128| TimedRun {
            spawned_us: 0,
            exited_us: 0,
            wall: Duration::ZERO,
            spans: vec![span("run.setup", 1, 0, setup_ms * 1000)],
        };
        let steps = breakdown(&[run(3), run(1), run(2)]);
        assert_eq!(steps, vec![("run.setup".to_owned(), 2.0)]);
    }
}
