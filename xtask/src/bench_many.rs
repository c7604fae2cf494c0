//! `cargo xtask bench many`: 64 `codehands run --agent fake` started together on one repo
//! and one home, beside the same 64 run one after another: the wall time of each, and the
//! peak total memory of every codehands process alive at once (runners and fake agents,
//! sampled from /proc). Writes `target/bench/many.json`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 64;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(outcome) = crate::rerun_in_release(&["bench", "many"], args) {
        return outcome;
    }
    let rounds = crate::rounds(args, 3, "many")?;
    let codehands = crate::bench_run::build_codehands()?;
    let dir = crate::workspace_root().join("target/bench/many");
    let _ = std::fs::remove_dir_all(&dir);
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
    crate::bench_run::make_repo(&repo)?;

    let mut together = Vec::new();
    let mut apart = Vec::new();
    for round in 0..rounds {
        let home = dir.join(format!("home-{round}-together"));
        together.push(measure(&codehands, &repo, &home, true)?);
        let home = dir.join(format!("home-{round}-apart"));
        apart.push(measure(&codehands, &repo, &home, false)?);
        println!("bench many: round {} of {rounds} done", round + 1);
    }
    let median = |samples: &[(Duration, u64)], f: fn(&(Duration, u64)) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let wall = |s: &(Duration, u64)| s.0.as_secs_f64() * 1000.0;
    let peak = |s: &(Duration, u64)| s.1 as f64 / 1024.0;
    let (tw, aw) = (median(&together, wall), median(&apart, wall));
    let (tp, ap) = (median(&together, peak), median(&apart, peak));
    println!(
        "\nbench many: {RUNS} fake runs on one repo and one home, median of {rounds} rounds\n  \
         together   {tw:>8.1} ms   peak total memory {tp:>7.1} MiB\n  \
         one by one {aw:>8.1} ms   peak total memory {ap:>7.1} MiB\n  \
         together / one by one: wall {:.2}x, memory {:.2}x",
        tw / aw,
        tp / ap
    );
    let json = serde_json::json!({
        "bench": "many",
        "runs": RUNS,
        "rounds": rounds,
        "togetherMs": tw,
        "oneByOneMs": aw,
        "togetherPeakMiB": tp,
        "oneByOnePeakMiB": ap,
        "wallRatio": tw / aw,
        "memoryRatio": tp / ap,
    });
    let path = crate::workspace_root().join("target/bench/many.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench many: wrote {}", path.display());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs the 64 sessions (together or one by one), then rejects them outside the timing.
/// Returns the wall time and the peak total resident memory in KiB.
fn measure(
    codehands: &Path,
    repo: &Path,
    home: &Path,
    together: bool,
) -> Result<(Duration, u64), String> {
    let started = Instant::now();
    let mut peak = 0;
    let mut ids = Vec::new();
    if together {
        let mut children: Vec<Child> = Vec::new();
        for _ in 0..RUNS {
            let id = runner_contract::SessionId::new_random().to_string();
            children.push(spawn_run(codehands, repo, home, &id)?);
            ids.push(id);
        }
        loop {
            peak = peak.max(total_rss_kib(codehands));
            let mut done = true;
            for child in &mut children {
                match child.try_wait().map_err(|e| e.to_string())? {
                    Some(status) if !status.success() => {
                        return Err(format!("a run failed: {status}"));
                    }
                    Some(_) => {}
                    None => done = false,
                }
            }
            if done {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    } else {
        for _ in 0..RUNS {
            let id = runner_contract::SessionId::new_random().to_string();
            let mut child = spawn_run(codehands, repo, home, &id)?;
            ids.push(id);
            loop {
                peak = peak.max(total_rss_kib(codehands));
                match child.try_wait().map_err(|e| e.to_string())? {
                    Some(status) if !status.success() => {
                        return Err(format!("a run failed: {status}"));
                    }
                    Some(_) => break,
                    None => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        }
    }
    let wall = started.elapsed();
    for id in &ids {
        let ok = command(codehands, repo, home)
            .args(["reject", id])
            .status()
            .map_err(|e| e.to_string())?
            .success();
        if !ok {
            return Err(format!("codehands reject {id} failed"));
        }
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
        .env("CODEHANDS_FAKE_DELAY_MS", "0")
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn spawn_run(codehands: &Path, repo: &Path, home: &Path, id: &str) -> Result<Child, String> {
    command(codehands, repo, home)
        .args([
            "run",
            ".",
            "Fix the failing test.",
            "--agent",
            "fake",
            "--json",
            "--then",
            "keep",
            "--session-id",
            id,
        ])
        .spawn()
        .map_err(|e| e.to_string())
}

/// The resident memory of every live process running `program`, summed, in KiB.
pub(crate) fn total_rss_kib(program: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let program: PathBuf = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_owned());
    entries
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == program))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter_map(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .sum()
}
