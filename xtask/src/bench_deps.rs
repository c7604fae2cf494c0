//! `cargo xtask bench deps`: what a checkout's dependency folder costs a boxed run. The same
//! demo repo twice, one with a 200 MB gitignored `node_modules` (which the box binds read-only
//! into the worktree), each run by `codehands run --agent fake` in its box, in interleaved
//! rounds (the order turned each round); prints each median and the difference, and writes
//! `target/bench/deps.json`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The size of the dependency folder, in files of [`FILE_BYTES`].
const FILES: usize = 2000;
const FILE_BYTES: usize = 100 * 1024;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(outcome) = crate::rerun_in_release(&["bench", "deps"], args) {
        return outcome;
    }
    let rounds = crate::rounds(args, 9, "deps")?;
    let codehands = crate::bench_run::build_codehands()?;
    let dir = crate::workspace_root().join("target/bench/deps");
    let _ = std::fs::remove_dir_all(&dir);
    let bare = dir.join("bare");
    let with = dir.join("with-node-modules");
    for repo in [&bare, &with] {
        std::fs::create_dir_all(repo).map_err(|e| e.to_string())?;
        crate::bench_run::make_repo(repo)?;
    }
    let block = vec![b'x'; FILE_BYTES];
    for n in 0..FILES {
        let folder = with.join(format!("node_modules/pkg-{}", n / 2));
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        std::fs::write(folder.join(format!("file-{n}.js")), &block).map_err(|e| e.to_string())?;
    }
    let mut samples: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let repo = if which == 0 { &bare } else { &with };
            let home = dir.join(format!("home-{round}-{which}"));
            samples[which].push(time_run(&codehands, repo, &home)?);
        }
        println!("bench deps: round {} of {rounds} done", round + 1);
    }
    let median = |v: &[Duration]| {
        let mut ms: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let (b, w) = (median(&samples[0]), median(&samples[1]));
    println!(
        "\nbench deps: a boxed fake run, median of {rounds} interleaved rounds\n  \
         without node_modules        {b:>8.1} ms\n  \
         with 200 MB node_modules    {w:>8.1} ms\n  \
         difference {:+.1} ms ({:.3}x)",
        w - b,
        w / b
    );
    let json = serde_json::json!({
        "bench": "deps",
        "rounds": rounds,
        "nodeModulesBytes": FILES * FILE_BYTES,
        "withoutMs": b,
        "withMs": w,
        "differenceMs": w - b,
        "ratio": w / b,
    });
    let path = crate::workspace_root().join("target/bench/deps.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench deps: wrote {}", path.display());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// One boxed fake run to its end (kept, then rejected outside the timing).
fn time_run(codehands: &Path, repo: &Path, home: &Path) -> Result<Duration, String> {
    let id = runner_contract::SessionId::new_random().to_string();
    let command = |args: &[&str]| {
        let mut cmd = Command::new(codehands);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("CODEHANDS_HOME", home)
            .env("CODEHANDS_FAKE_MODE", "replay")
            .env("CODEHANDS_FAKE_DELAY_MS", "0")
            .current_dir(repo)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    let started = Instant::now();
    let ok = command(&[
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "fake",
        "--json",
        "--then",
        "keep",
        "--session-id",
        &id,
    ])
    .status()
    .map_err(|e| e.to_string())?
    .success();
    let wall = started.elapsed();
    if !ok {
        return Err(format!("a run in {} failed", repo.display()));
    }
    command(&["reject", &id])
        .status()
        .map_err(|e| e.to_string())?;
    Ok(wall)
}
