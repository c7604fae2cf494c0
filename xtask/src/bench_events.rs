//! `cargo xtask bench events`: how fast and how soon an agent's lines reach the caller of
//! `codehands run --json`, now that every event goes agent → output file → supervisor →
//! event log → caller.
//!
//! Two agents, each a profile agent (a small Python program, read by the `text` parser, so
//! every line is one `message` event) that prints its own clock (`time.time_ns()`) on each
//! line: one prints 100,000 lines as fast as it can (events per second, from the spawn of
//! `codehands run` to its last event), one prints 300 lines, one every 10 ms (latency from the line
//! written to its event read by the caller: median and p99). The detached supervisor's
//! resident memory is sampled while it runs the 100,000 lines (peak, and first against last
//! sample: it must stay flat). Targets (issue 20): at least 50,000 events/s; latency median
//! ≤ 10 ms, p99 ≤ 50 ms; the supervisor ≤ 16 MiB. Rounds are interleaved and medians kept.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const FAST_LINES: u64 = 100_000;
const SLOW_EVERY_MS: u64 = 10;

/// The agent: its one argument (the profile's `{model}`) is the pause between lines in ms;
/// with no pause it prints the fast run's 100,000 lines, else the slow run's 300.
const AGENT: &str = r#"import sys, time
every = float(sys.argv[1]) / 1000.0
n = 300 if every else 100000
out = sys.stdout
for i in range(n):
    out.write("%d %d\n" % (time.time_ns(), i))
    if every:
        out.flush()
        time.sleep(every)
out.flush()
"#;

/// Runs the benchmark; `--rounds N` (default 3) runs each agent N times, interleaved.
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(outcome) = crate::rerun_in_release(&["bench", "events"], args) {
        return outcome;
    }
    let rounds = match args {
        [] => 3,
        [flag, n] if flag == "--rounds" => n.parse().map_err(|_| "--rounds takes a number")?,
        _ => return Err("usage: cargo xtask bench events [--rounds N]".into()),
    };
    let codehands = crate::bench_run::build_codehands()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = dir.path().join("repo");
    make_repo(&repo)?;
    let script = dir.path().join("agent.py");
    std::fs::write(&script, AGENT).map_err(|e| e.to_string())?;
    let profile = dir.path().join("lines.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"lines\"\ndescription = \"prints its clock\"\nprogram = \"python3\"\n\
             args = [\"{}\", \"{{model}}\"]\nprompt = \"stdin\"\nparser = \"text\"\n\
             version-args = [\"--version\"]\n",
            script.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let home = dir.path().join("home");
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    let mut peaks = Vec::new();
    let mut drift = Vec::new();
    for round in 0..rounds {
        let fast = || run_once(&codehands, &home, &repo, &profile, 0);
        let slow = || run_once(&codehands, &home, &repo, &profile, SLOW_EVERY_MS);
        let (f, s) = if round % 2 == 0 {
            let f = fast()?;
            (f, slow()?)
        } else {
            let s = slow()?;
            (fast()?, s)
        };
        println!(
            "round {}: {:.0} events/s, supervisor peak {:.1} MiB; latency median {:.2} ms p99 {:.2} ms",
            round + 1,
            f.events as f64 / f.wall.as_secs_f64(),
            f.peak_rss as f64 / 1048576.0,
            percentile(&s.latencies_ms, 0.5),
            percentile(&s.latencies_ms, 0.99),
        );
        rates.push(f.events as f64 / f.wall.as_secs_f64());
        peaks.push(f.peak_rss as f64 / 1048576.0);
        drift.push((f.last_rss as f64 - f.first_rss as f64) / 1048576.0);
        latencies.extend(s.latencies_ms);
    }
    let rate = percentile(&rates, 0.5);
    let median = percentile(&latencies, 0.5);
    let p99 = percentile(&latencies, 0.99);
    let peak = percentile(&peaks, 0.5);
    println!("events through `codehands run --json` ({rounds} rounds, medians):");
    println!(
        "  throughput  {rate:>10.0} events/s   target ≥ 50,000   ratio {:.2}x",
        rate / 50_000.0
    );
    println!("  latency     median {median:.2} ms (target ≤ 10), p99 {p99:.2} ms (target ≤ 50)");
    println!(
        "  supervisor  peak {peak:.1} MiB over {FAST_LINES} lines (target ≤ 16), first→last sample {:+.1} MiB",
        percentile(&drift, 0.5)
    );
    Ok(())
}

struct Outcome {
    events: u64,
    wall: Duration,
    latencies_ms: Vec<f64>,
    peak_rss: u64,
    first_rss: u64,
    last_rss: u64,
}

fn run_once(
    codehands: &Path,
    home: &Path,
    repo: &Path,
    profile: &Path,
    every_ms: u64,
) -> Result<Outcome, String> {
    let started = Instant::now();
    let mut child = Command::new(codehands)
        .args([
            "run",
            ".",
            "print lines",
            "--json",
            "--then",
            "reject",
            "--agent",
            "lines",
        ])
        .arg("--agent-file")
        .arg(profile)
        .args(["--model", &every_ms.to_string()])
        .env("CODEHANDS_HOME", home)
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let sampler = RssSampler::start();
    let mut events = 0;
    let mut latencies = Vec::new();
    let mut session = None;
    for line in stdout.lines() {
        let line = line.map_err(|e| e.to_string())?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let event: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        events += 1;
        if session.is_none() {
            session = event["sessionId"].as_str().map(str::to_owned);
            if let Some(id) = &session {
                sampler.watch(id);
            }
        }
        if event["type"] == "message"
            && let Some(written) = event["payload"]["text"]
                .as_str()
                .and_then(|t| t.split(' ').next())
                .and_then(|t| t.parse::<u128>().ok())
        {
            latencies.push(now.saturating_sub(written) as f64 / 1e6);
        }
    }
    let wall = started.elapsed();
    child.wait().map_err(|e| e.to_string())?;
    let (peak_rss, first_rss, last_rss) = sampler.finish();
    Ok(Outcome {
        events,
        wall,
        latencies_ms: latencies,
        peak_rss,
        first_rss,
        last_rss,
    })
}

/// Samples the resident memory of a session's detached supervisor every 20 ms.
struct RssSampler {
    id: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<Vec<u64>>,
}

impl RssSampler {
    fn start() -> Self {
        let id = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (id2, stop2) = (id.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            let mut samples = Vec::new();
            let mut pid = None;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                if pid.is_none()
                    && let Some(id) = id2.lock().ok().and_then(|g| g.clone())
                {
                    pid = supervisor_pid(&id);
                }
                if let Some(rss) = pid.and_then(rss_of) {
                    samples.push(rss);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            samples
        });
        Self { id, stop, handle }
    }

    fn watch(&self, id: &str) {
        if let Ok(mut g) = self.id.lock() {
            *g = Some(id.to_owned());
        }
    }

    fn finish(self) -> (u64, u64, u64) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let samples = self.handle.join().unwrap_or_default();
        (
            samples.iter().copied().max().unwrap_or(0),
            samples.first().copied().unwrap_or(0),
            samples.last().copied().unwrap_or(0),
        )
    }
}

fn supervisor_pid(id: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let text = String::from_utf8_lossy(&cmdline);
        (text.contains("__supervise") && text.contains(id)).then_some(pid)
    })
}

fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at]
}

fn make_repo(repo: &Path) -> Result<(), String> {
    std::fs::create_dir_all(repo).map_err(|e| e.to_string())?;
    std::fs::write(repo.join("README.md"), "bench\n").map_err(|e| e.to_string())?;
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["-c", "user.name=b", "-c", "user.email=b@example.invalid"])
            .args(args)
            .current_dir(repo)
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| {
                o.status
                    .success()
                    .then_some(())
                    .ok_or_else(|| String::from_utf8_lossy(&o.stderr).into_owned())
            })
    };
    git(&["init", "--quiet", "--initial-branch=main"])?;
    git(&["add", "--all"])?;
    git(&["commit", "--quiet", "-m", "base"])
}
