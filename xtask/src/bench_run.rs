//! `cargo xtask bench run`: `codehands run` with the real Claude Code in its box, the same
//! without the box (`--isolation none`) and the bare `claude -p`, interleaved, on the same
//! small repo and the same one-turn script from the scripted model server. The targets
//! (issue 45): the boxed run at most 1.05x the bare agent, the runner alone boxed at most
//! bubblewrap's own `true` + 15 ms and unboxed at most 15 ms, the runner's peak memory at
//! most 16 MiB; each figure is printed with its spread. Where the box's time goes is the runner alone with an agent
//! that takes none (the fake agent), boxed and not, and bubblewrap alone starting `true`. Prints the ratio of wall times, the runner's own peak
//! memory (without the agent), the runner's own time around an agent that takes
//! none (the fake agent), and where that time goes: the spans its processes write to the
//! file `CODEHANDS_TIMING` names (codehands::timing), through the very spawn, supervisor and
//! log a user's run takes, as medians per step (`bench_spans.rs`); and writes
//! `target/bench/run.json`. A debug build of xtask runs itself again in release first.
//!
//! `codehands run` is run as a script runs it: `--json`, and no `--then`, so off a
//! terminal the session is kept for approval (the bare run leaves its change in
//! place too). After each round, outside the timing, the kept sessions are rejected
//! and the extra worktree removed, so every round sees the same repo: one with no
//! other worktrees, as a person who approves or rejects each run has. (Otherwise
//! each round would add worktrees, and both git and Claude Code spend time on every
//! registered worktree.) Claude Code's own wall time varies by tens of milliseconds
//! from run to run on a loaded machine, so the runs are interleaved (the order flips
//! every round) and the ratio is the median of the per-round ratios; the ratio of
//! the medians is printed beside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model_server::{ModelServer, Script, Turn};
use runner_contract::{Agent, AgentRequest, SessionId, StdinClose};

const ROUNDS: usize = 41;
const PROMPT: &str = "Say hello.";

/// Runs the benchmark; `--rounds N` changes how many runs of each are timed.
pub fn run(args: &[String]) -> Result<(), String> {
    // The overhead split times vcs-git and the process layer inside this process.
    if let Some(outcome) = crate::rerun_in_release(&["bench", "run"], args) {
        return outcome;
    }
    let rounds = match args {
        [] => ROUNDS,
        [flag, n] if flag == "--rounds" => n.parse().map_err(|_| "--rounds takes a number")?,
        _ => return Err("usage: cargo xtask bench run [--rounds N]".into()),
    };
    let claude = runner_testkit::agents::find_pinned("CLAUDE_BIN", agent_claude::pinned::path_in)
        .ok_or("Claude Code is not installed: run `cargo xtask agents`")?;
    let codehands = build_codehands()?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(bench(&claude, &codehands, rounds))
}

pub(crate) fn build_codehands() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["build", "--release", "--quiet", "-p", "codehands"])
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| e.to_string())?
        .success();
    if !ok {
        return Err("cargo build --release -p codehands failed".into());
    }
    Ok(crate::workspace_root().join("target/release/codehands"))
}

struct Sample {
    wall: Duration,
    /// Peak resident memory of the measured process itself, in KiB (VmHWM).
    peak_kib: u64,
}

async fn bench(claude: &Path, codehands: &Path, rounds: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = dir.path().join("repo");
    make_repo(&repo)?;
    let agent_home = dir.path().join("agent-home");
    std::fs::create_dir_all(&agent_home).map_err(|e| e.to_string())?;
    let server = ModelServer::start(Script {
        turns: vec![Turn::text("Hello.")],
        after_end: Some(Turn::text("Hello.")),
        ..Script::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    let env = |cmd: &mut Command| {
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &agent_home)
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .env("ANTHROPIC_API_KEY", "sk-ant-dummy-for-bench")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .current_dir(&repo)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    };
    let bare_cmd = || {
        let mut cmd = Command::new(claude);
        cmd.args([
            "-p",
            PROMPT,
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-budget-usd",
            "0.5",
        ]);
        env(&mut cmd);
        cmd
    };
    // `agent` is claude-code or fake; each run gets its own CODEHANDS_HOME, as a fresh
    // session would, and leaves its session awaiting approval.
    let ours_cmd = |agent: &str, home: PathBuf, isolation: &str| {
        let mut cmd = Command::new(codehands);
        cmd.args(["run", ".", PROMPT, "--agent", agent, "--json"]);
        cmd.args(["--isolation", isolation]);
        env(&mut cmd);
        cmd.env("CODEHANDS_HOME", home).env("CLAUDE_BIN", claude);
        cmd
    };
    let mut bare = Vec::new();
    let mut ours = Vec::new();
    let mut unboxed = Vec::new();
    let mut alone = Vec::new();
    let mut alone_unboxed = Vec::new();
    let mut bwrap_alone = Vec::new();
    let mut flags = Vec::new();
    let mut in_worktree = Vec::new();
    // Interleaved, after one warm-up of each, so both see the same machine state; the
    // order flips every round so neither always runs first.
    for round in 0..=rounds {
        let home = dir.path().join(format!("home-{round}"));
        let open_home = dir.path().join(format!("open-home-{round}"));
        let fake_home = dir.path().join(format!("fake-home-{round}"));
        let open_fake_home = dir.path().join(format!("open-fake-home-{round}"));
        // The three in a turning order: each goes first, second and third in turn.
        let mut samples: [Option<Sample>; 3] = [None, None, None];
        for k in 0..3 {
            let which = (round + k) % 3;
            samples[which] = Some(match which {
                0 => measure(bare_cmd())?,
                1 => measure(ours_cmd("claude-code", home.clone(), "box"))?,
                _ => measure(ours_cmd("claude-code", open_home.clone(), "none"))?,
            });
        }
        let [Some(b), Some(o), Some(u)] = samples else {
            unreachable!("every one was measured")
        };
        let a = crate::bench_spans::timed_run(
            ours_cmd("fake", fake_home.clone(), "box"),
            &dir.path().join("timing-box.jsonl"),
        )?;
        let au = crate::bench_spans::timed_run(
            ours_cmd("fake", open_fake_home.clone(), "none"),
            &dir.path().join("timing-none.jsonl"),
        )?;
        let bw = measure(bwrap_true()?)?.wall;
        let f = same_flags(claude, &repo, &agent_home, &server.base_url())?;
        // A fresh worktree each round, as every session gets: Claude Code sets up a new
        // project folder for every new working folder, which costs it time.
        let linked = dir.path().join(format!("linked-{round}"));
        git_worktree_add(&repo, &linked, round)?;
        let w = same_flags(claude, &linked, &agent_home, &server.base_url())?;
        git(&repo, &["worktree", "remove", "--force"], Some(&linked))?;
        for home in [&home, &open_home, &fake_home, &open_fake_home] {
            reject_all(codehands, home)?;
        }
        if round > 0 {
            bare.push(b);
            ours.push(o);
            unboxed.push(u);
            alone.push(a);
            alone_unboxed.push(au);
            bwrap_alone.push(bw);
            flags.push(f);
            in_worktree.push(w);
        }
    }
    let walls = |samples: &[Sample]| samples.iter().map(|s| s.wall).collect::<Vec<_>>();
    let timed_walls =
        |runs: &[crate::bench_spans::TimedRun]| runs.iter().map(|r| r.wall).collect::<Vec<_>>();
    let (bare_ms, bare_spread) = median_spread(walls(&bare));
    let (ours_ms, ours_spread) = median_spread(walls(&ours));
    let (alone_ms, alone_spread) = median_spread(timed_walls(&alone));
    let (unboxed_ms, unboxed_spread) = median_spread(walls(&unboxed));
    let (alone_unboxed_ms, alone_unboxed_spread) = median_spread(timed_walls(&alone_unboxed));
    let (bwrap_ms, bwrap_spread) = median_spread(bwrap_alone);
    let (box_ratio, box_ratio_spread) = median_ratio(&ours, &unboxed);
    let (unboxed_ratio, unboxed_ratio_spread) = median_ratio(&unboxed, &bare);
    let (ratio, ratio_spread) = median_ratio(&ours, &bare);
    let ratio_of_medians = ours_ms / bare_ms;
    let runner_peak = ours.iter().map(|s| s.peak_kib).max().unwrap_or(0);
    let runner_peak_median = middle(ours.iter().map(|s| s.peak_kib as f64).collect());
    let agent_peak = bare.iter().map(|s| s.peak_kib).max().unwrap_or(0);
    let boxed_steps = crate::bench_spans::breakdown(&alone);
    let unboxed_steps = crate::bench_spans::breakdown(&alone_unboxed);
    let (flags_ms, flags_spread) = median_spread(flags);
    let (worktree_ms, worktree_spread) = median_spread(in_worktree);
    let runner_peak_mib = runner_peak as f64 / 1024.0;
    println!("medians of {rounds} interleaved rounds, ± half the interquartile range");
    println!(
        "bare claude -p      {bare_ms:>8.1} ms ±{bare_spread:.1}, agent peak {:.0} MiB",
        agent_peak as f64 / 1024.0
    );
    println!(
        "codehands run       {ours_ms:>8.1} ms ±{ours_spread:.1} boxed, runner peak {runner_peak_mib:.1} MiB (median {:.1}; without the agent)",
        runner_peak_median / 1024.0
    );
    println!("  --isolation none  {unboxed_ms:>8.1} ms ±{unboxed_spread:.1} unboxed");
    println!(
        "boxed / unboxed     {box_ratio:>8.3}x ±{box_ratio_spread:.3} (median of the per-round ratios)"
    );
    println!(
        "boxed / bare        {ratio:>8.3}x ±{ratio_spread:.3} (median of the per-round ratios), ratio of the medians {ratio_of_medians:.3}x; unboxed / bare {unboxed_ratio:.3}x ±{unboxed_ratio_spread:.3}"
    );
    println!(
        "the runner alone    {alone_ms:>8.1} ms ±{alone_spread:.1} boxed, {alone_unboxed_ms:.1} ms ±{alone_unboxed_spread:.1} unboxed: codehands run --agent fake, an agent that takes no time; the box costs {:.1} ms of it, bubblewrap starting `true` {bwrap_ms:.1} ms ±{bwrap_spread:.1}",
        alone_ms - alone_unboxed_ms
    );
    println!(
        "claude alone with codehands' arguments and stdin {flags_ms:.1} ms ±{flags_spread:.1}: {:.3}x the bare run; codehands run is {:.3}x that",
        flags_ms / bare_ms,
        ours_ms / flags_ms
    );
    println!(
        "the same in a fresh linked worktree {worktree_ms:.1} ms ±{worktree_spread:.1}: {:.3}x the bare run; codehands run is {:.3}x that",
        worktree_ms / bare_ms,
        ours_ms / worktree_ms
    );
    let target = |met: bool| if met { "met" } else { "MISSED" };
    println!(
        "targets: boxed / bare at most 1.05x ({}, both ratios); the runner alone boxed at most bubblewrap's `true` + 15 ms ({}: {:+.1} ms); unboxed at most 15 ms ({}); runner peak at most 16 MiB ({})",
        target(ratio <= 1.05 && ratio_of_medians <= 1.05),
        target(alone_ms <= bwrap_ms + 15.0),
        alone_ms - bwrap_ms,
        target(alone_unboxed_ms <= 15.0),
        target(runner_peak_mib <= 16.0),
    );
    crate::bench_spans::print_breakdown(
        &format!("where the runner alone spends its time, unboxed (medians of {rounds}):"),
        &unboxed_steps,
    );
    crate::bench_spans::print_breakdown(
        &format!("where the runner alone spends its time, boxed (medians of {rounds}):"),
        &boxed_steps,
    );
    println!(
        "load average        {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let json = serde_json::json!({
        "bareMs": bare_ms, "codehandsMs": ours_ms, "ratio": ratio,
        "unboxedMs": unboxed_ms, "boxedOverUnboxed": box_ratio, "unboxedOverBare": unboxed_ratio,
        "runnerAloneUnboxedMs": alone_unboxed_ms, "bwrapTrueMs": bwrap_ms,
        "ratioOfMedians": ratio_of_medians, "rounds": rounds,
        "spreadMs": {
            "bare": bare_spread, "codehands": ours_spread, "unboxed": unboxed_spread,
            "runnerAlone": alone_spread, "runnerAloneUnboxed": alone_unboxed_spread,
            "bwrapTrue": bwrap_spread,
        },
        "ratioSpread": ratio_spread,
        "runnerAloneMs": alone_ms,
        "claudeWithOurArgumentsMs": flags_ms,
        "claudeWithOurArgumentsInAWorktreeMs": worktree_ms,
        "runnerPeakMiB": runner_peak as f64 / 1024.0, "agentPeakMiB": agent_peak as f64 / 1024.0,
        "breakdownMs": {
            "unboxed": steps_json(&unboxed_steps),
            "boxed": steps_json(&boxed_steps),
        },
        "loadAverage": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    });
    let out = crate::workspace_root().join("target/bench");
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    std::fs::write(
        out.join("run.json"),
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    println!("wrote target/bench/run.json");
    Ok(())
}

/// bubblewrap starting `true` in namespaces of its own with the system read-only: the part
/// of a box's start that is bubblewrap's own.
pub(crate) fn bwrap_true() -> Result<Command, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let bwrap = std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or("bubblewrap is not installed: run `cargo xtask system`")?;
    let mut cmd = Command::new(bwrap);
    cmd.args([
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/bin",
        "/bin",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--",
        "/usr/bin/true",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    Ok(cmd)
}

/// Claude Code started exactly as the runner starts it (our arguments, the prompt on
/// stdin, stdin closed when the adapter says), with no runner around it: the part of
/// the difference that is the agent's own mode, not codehands.
fn same_flags(
    claude: &Path,
    repo: &Path,
    agent_home: &Path,
    base_url: &str,
) -> Result<Duration, String> {
    use std::io::{BufRead, Write};
    let request = AgentRequest {
        permissions: Default::default(),
        session_id: SessionId::new_random(),
        worktree: repo.to_path_buf(),
        prompt: PROMPT.into(),
        model: None,
        budget_usd: 0.5,
        notes: None,
        notes_file: None,
        test_command: Some("npm test".into()),
        resume: None,
        provider_env: Vec::new(),
        read_only: false,
        tools: Default::default(),
    };
    let invocation = agent_claude::ClaudeCode::with_program(claude)
        .invocation(&request)
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut child = Command::new(&invocation.program)
        .args(&invocation.args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", agent_home)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-for-bench")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take();
    if let Some(pipe) = stdin.as_mut() {
        for line in &invocation.stdin {
            pipe.write_all(format!("{line}\n").as_bytes())
                .map_err(|e| e.to_string())?;
        }
    }
    if invocation.close_stdin == StdinClose::AfterWrite {
        stdin = None;
    }
    let out = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
    for line in out.lines() {
        if line
            .map_err(|e| e.to_string())?
            .contains("\"type\":\"result\"")
        {
            stdin = None;
        }
    }
    drop(stdin);
    child.wait().map_err(|e| e.to_string())?;
    Ok(started.elapsed())
}

/// Runs `cmd` to its end, sampling its own peak memory from /proc while it runs.
fn measure(mut cmd: Command) -> Result<Sample, String> {
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    loop {
        if let Some(hwm) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| vm_hwm(&s))
        {
            peak_kib = peak_kib.max(hwm);
        }
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if !status.success() {
                return Err(format!("{cmd:?} failed: {status}"));
            }
            return Ok(Sample {
                wall: started.elapsed(),
                peak_kib,
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn vm_hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A breakdown as a JSON object, step name to milliseconds.
fn steps_json(steps: &[(String, f64)]) -> serde_json::Value {
    steps
        .iter()
        .map(|(name, ms)| (name.trim().to_owned(), serde_json::json!(ms)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn git_worktree_add(repo: &Path, path: &Path, round: usize) -> Result<(), String> {
    let branch = format!("bench-linked-{round}");
    git(
        repo,
        &["worktree", "add", "--quiet", "-b", &branch],
        Some(path),
    )
}

/// `git -C repo ARGS [PATH]`.
fn git(repo: &Path, args: &[&str], path: Option<&Path>) -> Result<(), String> {
    let ok = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .args(path)
        .status()
        .map_err(|e| e.to_string())?
        .success();
    if ok {
        Ok(())
    } else {
        Err(format!("git {} failed", args.join(" ")))
    }
}

/// Rejects every session kept under `home`: its worktree and branch go.
fn reject_all(codehands: &Path, home: &Path) -> Result<(), String> {
    let listed = Command::new(codehands)
        .args(["sessions", "--json"])
        .env("CODEHANDS_HOME", home)
        .output()
        .map_err(|e| e.to_string())?;
    let sessions: serde_json::Value =
        serde_json::from_slice(&listed.stdout).map_err(|e| format!("codehands sessions: {e}"))?;
    for id in sessions
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["sessionId"].as_str())
    {
        let ok = Command::new(codehands)
            .args(["reject", id])
            .env("CODEHANDS_HOME", home)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?
            .success();
        if !ok {
            return Err(format!("codehands reject {id} failed"));
        }
    }
    Ok(())
}

pub(crate) fn make_repo(repo: &Path) -> Result<(), String> {
    runner_fake::demo_repo::write(repo).map_err(|e| e.to_string())?;
    for args in [
        &["init", "--quiet", "--initial-branch=main"][..],
        &["add", "--all"],
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@codehands.invalid",
            "commit",
            "--quiet",
            "-m",
            "base",
        ],
    ] {
        git(repo, args, None)?;
    }
    Ok(())
}

/// The median of `ours[i] / bare[i]` (each round's two runs saw the same machine), and
/// half the interquartile range of those ratios.
fn median_ratio(ours: &[Sample], bare: &[Sample]) -> (f64, f64) {
    let ratios: Vec<f64> = ours
        .iter()
        .zip(bare)
        .map(|(o, b)| o.wall.as_secs_f64() / b.wall.as_secs_f64())
        .collect();
    (middle(ratios.clone()), crate::bench_spans::half_iqr(ratios))
}

/// The median of `samples` and half their interquartile range, in milliseconds.
fn median_spread(samples: Vec<Duration>) -> (f64, f64) {
    let values: Vec<f64> = samples.into_iter().map(ms).collect();
    (middle(values.clone()), crate::bench_spans::half_iqr(values))
}

fn middle(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
