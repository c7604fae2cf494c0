//! `cargo xtask bench attempts`: a task of 4 fake attempts (`codehands run --attempts 4`,
//! then `codehands task ID --follow --json` until every attempt has ended) beside a task of
//! one, in interleaved rounds: the median wall time of each and the peak total memory of
//! every codehands process alive meanwhile (the runner, the supervisors, the fake agents,
//! sampled from /proc), printed as ratios (the goal: 4 attempts take at most 1.3x the wall
//! time of one). The fake agent waits `DELAY_MS` between the lines it replays, as a real
//! agent waits on its model: attempts at once are worth it because agents mostly wait.
//! Writes `target/bench/attempts.json`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The fake agent's pause between the lines of its replay, in milliseconds.
const DELAY_MS: &str = "40";

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(outcome) = crate::rerun_in_release(&["bench", "attempts"], args) {
        return outcome;
    }
    let rounds = crate::rounds(args, 5, "attempts")?;
    let codehands = crate::bench_run::build_codehands()?;
    let dir = crate::workspace_root().join("target/bench/attempts");
    let _ = std::fs::remove_dir_all(&dir);
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
    crate::bench_run::make_repo(&repo)?;
    let home = dir.join("home");

    let mut one = Vec::new();
    let mut four = Vec::new();
    for round in 0..rounds {
        // Interleaved, in a turning order, so a machine that slows down mid-way weighs on both.
        if round % 2 == 0 {
            one.push(measure(&codehands, &repo, &home, 1)?);
            four.push(measure(&codehands, &repo, &home, 4)?);
        } else {
            four.push(measure(&codehands, &repo, &home, 4)?);
            one.push(measure(&codehands, &repo, &home, 1)?);
        }
        println!("bench attempts: round {} of {rounds} done", round + 1);
    }
    let median = |samples: &[(Duration, u64)], f: fn(&(Duration, u64)) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let wall = |s: &(Duration, u64)| s.0.as_secs_f64() * 1000.0;
    let peak = |s: &(Duration, u64)| s.1 as f64 / 1024.0;
    let (ow, fw) = (median(&one, wall), median(&four, wall));
    let (op, fp) = (median(&one, peak), median(&four, peak));
    let ratio = fw / ow;
    println!(
        "\nbench attempts: a task of the fake agent ({DELAY_MS} ms between lines), median of \
         {rounds} rounds\n  \
         1 attempt  {ow:>8.1} ms   peak total memory {op:>7.1} MiB\n  \
         4 attempts {fw:>8.1} ms   peak total memory {fp:>7.1} MiB\n  \
         4 / 1: wall {ratio:.2}x (goal <= 1.30x: {}), memory {:.2}x",
        if ratio <= 1.3 { "met" } else { "NOT met" },
        fp / op
    );
    let json = serde_json::json!({
        "bench": "attempts",
        "rounds": rounds,
        "fakeDelayMs": DELAY_MS.parse::<u64>().unwrap_or(0),
        "oneAttemptMs": ow,
        "fourAttemptsMs": fw,
        "oneAttemptPeakMiB": op,
        "fourAttemptsPeakMiB": fp,
        "wallRatio": ratio,
        "memoryRatio": fp / op,
        "wallGoal": 1.3,
    });
    let path = crate::workspace_root().join("target/bench/attempts.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench attempts: wrote {}", path.display());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs a task of `n` attempts to its end, then rejects it outside the timing. Returns the
/// wall time and the peak total resident memory in KiB.
fn measure(
    codehands: &Path,
    repo: &Path,
    home: &Path,
    n: usize,
) -> Result<(Duration, u64), String> {
    let started = Instant::now();
    let out = command(codehands, repo, home)
        .args(["run", ".", "Fix the failing test.", "--agent", "fake"])
        .args(["--attempts", &n.to_string()])
        .stdout(Stdio::piped())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "codehands run --attempts {n} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let task = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mut follow = command(codehands, repo, home)
        .args(["task", &task, "--follow", "--json"])
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut peak = 0;
    loop {
        peak = peak.max(crate::bench_many::total_rss_kib(codehands));
        match follow.try_wait().map_err(|e| e.to_string())? {
            Some(status) if !status.success() => {
                return Err(format!("codehands task {task} --follow failed: {status}"));
            }
            Some(_) => break,
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    let wall = started.elapsed();
    let ok = command(codehands, repo, home)
        .args(["reject", &task])
        .status()
        .map_err(|e| e.to_string())?
        .success();
    if !ok {
        return Err(format!("codehands reject {task} failed"));
    }
    Ok((wall, peak))
}

fn command(codehands: &Path, repo: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(codehands);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEHANDS_HOME", home)
        .env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", DELAY_MS)
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}
