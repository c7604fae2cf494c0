//! `cargo xtask bench scale`: 64 fake runs started together through a Docker Swarm
//! (`--engine swarm`, this machine's engine made a one-node swarm for the bench and left
//! again when it was not one) against the same 64 with `--engine local` (the bubblewrap box),
//! in interleaved rounds: how many succeeded, the batch's wall time, and each engine's median
//! run time (start to awaiting approval) with the per-run overhead of the swarm, and the
//! median of each phase of a swarm run as its shim timed it (`engine_docker::Phases`). Writes
//! `target/bench/scale.json`.
//!
//! It runs the dev build of `codehands` (both engines run the same binary, and the time that
//! matters here is the engine's: a service, its secrets and network, a container, a log),
//! in an image made from that binary for the bench and removed after it.
//!
//! The swarm's runs take warm boxes (`CODEHANDS_SWARM_POOL`, docs/remote-box.md "Warm
//! boxes"): one run made first gives the boxes' kind, the pool is filled to the batch's size
//! from it, and after each swarm batch the bench waits until the pool is whole again (each
//! run's cleanup makes the box that replaces the one it took) before the next batch starts.
//! That wait is the pool's refill, reported apart: it is not on any run's path.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How many runs start together unless `--runs N` says otherwise.
const RUNS: usize = 64;
/// How long a batch may take before its runs still going count as failed.
const BATCH_LIMIT: Duration = Duration::from_secs(300);

struct Batch {
    wall: Duration,
    runs: Vec<Duration>,
    succeeded: usize,
    phases: Vec<engine_docker::Phases>,
    run_dirs: Vec<std::path::PathBuf>,
    /// The load average (1 min) as the batch ended: others build on this machine.
    load: f64,
}

pub fn run(args: &[String]) -> Result<(), String> {
    // `--runs N` first (a smaller batch, to look at the phases), then `--rounds N`.
    let (runs, args) = match args {
        [flag, n, rest @ ..] if flag == "--runs" => (
            n.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(format!("--runs takes a number above 0, not {n:?}"))?,
            rest,
        ),
        _ => (RUNS, args),
    };
    let rounds = crate::rounds(args, 3, "scale")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--quiet", "-p", "codehands"])
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| e.to_string())?;
    if !built.success() {
        return Err("cargo build -p codehands failed".into());
    }
    let codehands = crate::workspace_root().join("target/debug/codehands");
    let swarm = Swarm::join()?;
    let image = format!("codehands/remote:bench-{}", std::process::id());
    let outcome = engine_docker::image::build(&image, &codehands, &[]).and_then(|()| {
        let result = bench(&codehands, &image, rounds, runs);
        let _ = docker(&["image", "rm", "--force", &image]);
        result
    });
    let ssh_env: Vec<(String, String)> = ["PATH", "HOME", "SSH_AUTH_SOCK"]
        .iter()
        .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
        .collect();
    engine_docker::remove_shared(std::env::var("DOCKER_HOST").ok().as_deref(), &ssh_env);
    drop(swarm);
    outcome
}

fn bench(codehands: &Path, image: &str, rounds: usize, runs: usize) -> Result<(), String> {
    let dir = crate::workspace_root().join("target/bench/scale");
    let _ = std::fs::remove_dir_all(&dir);
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
    crate::bench_run::make_repo(&repo)?;
    let (mut swarm, mut local) = (Vec::new(), Vec::new());
    let swarm_home = dir.join("home-swarm");
    let filled = fill_pool(codehands, image, &repo, &swarm_home, runs)?;
    println!(
        "bench scale: the pool of {runs} warm boxes made and started in {:.1} s",
        filled.as_secs_f64()
    );
    let mut refills = Vec::new();
    for round in 0..rounds {
        // Interleaved, and the order turned each round, so neither engine always goes first.
        let order = if round % 2 == 0 {
            ["swarm", "local"]
        } else {
            ["local", "swarm"]
        };
        for engine in order {
            let home = if engine == "swarm" {
                swarm_home.clone()
            } else {
                dir.join(format!("home-{round}-{engine}"))
            };
            let mut batch = measure(codehands, image, &repo, &home, engine, runs)?;
            // The next batch (of either engine) starts once the boxes taken are removed and
            // replaced: the engine's work after a batch does not load the next one.
            if engine == "swarm" {
                let refill = pool_ready(image, runs)?;
                println!(
                    "bench scale: round {} swarm: the pool whole again {:.1} s after the batch",
                    round + 1,
                    refill.as_secs_f64()
                );
                refills.push(refill.as_secs_f64() * 1000.0);
                // Read again: each run's cleanup (done now) added its own phase.
                batch.phases = batch
                    .run_dirs
                    .iter()
                    .filter_map(|d| engine_docker::Phases::read(d))
                    .collect();
            }
            let warm = batch.phases.iter().filter(|p| p.warm).count();
            println!(
                "bench scale: round {} {engine}: {}/{runs} ok in {:.1} s{} (load {:.1})",
                round + 1,
                batch.succeeded,
                batch.wall.as_secs_f64(),
                if engine == "swarm" {
                    format!(", {warm} in warm boxes")
                } else {
                    String::new()
                },
                batch.load
            );
            if engine == "swarm" {
                swarm.push(batch)
            } else {
                local.push(batch)
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let wall = |b: &[Batch]| median(b.iter().map(|b| b.wall.as_secs_f64() * 1000.0).collect());
    let per_run = |b: &[Batch]| {
        median(
            b.iter()
                .flat_map(|b| b.runs.iter().map(|d| d.as_secs_f64() * 1000.0))
                .collect(),
        )
    };
    let ok = |b: &[Batch]| b.iter().map(|b| b.succeeded).min().unwrap_or(0);
    let (sw, lw, sr, lr) = (wall(&swarm), wall(&local), per_run(&swarm), per_run(&local));
    let phases = phase_medians(&swarm);
    println!(
        "\nbench scale: {runs} fake runs started together, median of {rounds} rounds\n  \
         swarm  {:>2}/{runs} ok (worst round)   wall {sw:>8.1} ms   run {sr:>8.1} ms\n  \
         local  {:>2}/{runs} ok (worst round)   wall {lw:>8.1} ms   run {lr:>8.1} ms\n  \
         the swarm's overhead per run: {:.1} ms (median run time, swarm − local)",
        ok(&swarm),
        ok(&local),
        sr - lr
    );
    let loads: Vec<f64> = swarm.iter().chain(&local).map(|b| b.load).collect();
    let warm = swarm
        .iter()
        .map(|b| b.phases.iter().filter(|p| p.warm).count())
        .min()
        .unwrap_or(0);
    println!(
        "  warm boxes taken (worst round): {warm}/{runs}; the pool's refill between rounds: {:.1} s \
         (median, no run waits for it); load average (1 min) at each batch's end: {loads:.1?}",
        median(refills.clone()) / 1000.0
    );
    println!("\n  phases of a swarm run (median, p90; ms; from each run's remote-phases.json)");
    for (name, median, p90) in &phases {
        println!("    {name:<12} {median:>8.0} {p90:>8.0}");
    }
    let json = serde_json::json!({
        "bench": "scale",
        "runs": runs,
        "rounds": rounds,
        "swarm": { "succeededWorstRound": ok(&swarm), "wallMs": sw, "medianRunMs": sr },
        "local": { "succeededWorstRound": ok(&local), "wallMs": lw, "medianRunMs": lr },
        "overheadPerRunMs": sr - lr,
        "pool": {
            "size": runs,
            "filledMs": filled.as_secs_f64() * 1000.0,
            "refillMs": refills,
            "warmRunsWorstRound": warm,
        },
        "loadAverage": loads,
        "phases": phases
            .iter()
            .map(|(name, median, p90)| {
                (name.to_string(), serde_json::json!({ "medianMs": median, "p90Ms": p90 }))
            })
            .collect::<serde_json::Map<_, _>>(),
    });
    let path = crate::workspace_root().join("target/bench/scale.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench scale: wrote {}", path.display());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Each phase's median and 90th percentile over the swarm's runs (of every round), with the
/// shim's whole life as `total`.
fn phase_medians(batches: &[Batch]) -> Vec<(&'static str, f64, f64)> {
    let all: Vec<&engine_docker::Phases> = batches.iter().flat_map(|b| &b.phases).collect();
    let at = |mut v: Vec<f64>, q: f64| {
        v.sort_by(f64::total_cmp);
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        v.get(i).copied().unwrap_or(f64::NAN)
    };
    let names = engine_docker::phases::NAMES
        .iter()
        .copied()
        .chain(["total"]);
    names
        .enumerate()
        .map(|(i, name)| {
            let values: Vec<f64> = all
                .iter()
                .filter_map(|p| p.values().get(i).copied().unwrap_or(p.total_ms))
                .map(|ms| ms as f64)
                .collect();
            (name, at(values.clone(), 0.5), at(values, 0.9))
        })
        .collect()
}

/// Starts the runs together on `engine` and waits for every one; rejects them after.
fn measure(
    codehands: &Path,
    image: &str,
    repo: &Path,
    home: &Path,
    engine: &str,
    runs: usize,
) -> Result<Batch, String> {
    let started = Instant::now();
    let mut children: Vec<(String, Child, Option<Duration>)> = Vec::new();
    for _ in 0..runs {
        let id = runner_contract::SessionId::new_random().to_string();
        let child = command(codehands, image, repo, home, runs)
            .args([
                "run",
                ".",
                "Fix the failing test.",
                "--agent",
                "fake",
                "--json",
                "--then",
                "keep",
            ])
            .args(["--engine", engine, "--session-id", &id])
            .spawn()
            .map_err(|e| e.to_string())?;
        children.push((id, child, None));
    }
    let mut succeeded = 0;
    while children.iter().any(|(_, _, done)| done.is_none()) {
        // A run still going after the limit counts as failed, and is stopped.
        if started.elapsed() > BATCH_LIMIT {
            for (id, child, done) in children.iter_mut().filter(|(_, _, d)| d.is_none()) {
                let _ = command(codehands, image, repo, home, runs)
                    .args(["stop", id])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                *done = Some(started.elapsed());
            }
            println!("bench scale: {engine}: runs still going after {BATCH_LIMIT:?} were stopped");
            break;
        }
        for (_, child, done) in children.iter_mut().filter(|(_, _, d)| d.is_none()) {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                *done = Some(started.elapsed());
                succeeded += usize::from(status.success());
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall = started.elapsed();
    // Why a run failed, once per batch, so a failing engine says what went wrong.
    if succeeded < runs {
        let why = children.iter().find_map(|(id, _, _)| {
            let log =
                std::fs::read_to_string(home.join("runs").join(id).join("events.jsonl")).ok()?;
            log.lines()
                .find(|l| l.contains("task.failed"))
                .map(str::to_owned)
        });
        println!(
            "bench scale: {engine}: {} failed; the first: {}",
            runs - succeeded,
            why.unwrap_or_else(|| format!(
                "no task.failed: stopped after {BATCH_LIMIT:?} (on a swarm: a task the node \
                 had not got past \"Starting\")"
            ))
        );
    }
    let times = children.iter().filter_map(|(_, _, d)| *d).collect();
    let run_dirs: Vec<_> = children
        .iter()
        .map(|(id, _, _)| home.join("runs").join(id))
        .collect();
    let phases = run_dirs
        .iter()
        .filter_map(|d| engine_docker::Phases::read(d))
        .collect();
    for (id, _, _) in &children {
        let _ = command(codehands, image, repo, home, runs)
            .args(["reject", id])
            .status();
    }
    Ok(Batch {
        wall,
        runs: times,
        succeeded,
        phases,
        run_dirs,
        load: load_average(),
    })
}

/// The machine's load average over the last minute.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// One swarm run (a box made for it), whose plan gives the kind of box the bench's runs
/// need; then the pool filled to `runs` boxes of that kind and waited for.
fn fill_pool(
    codehands: &Path,
    image: &str,
    repo: &Path,
    home: &Path,
    runs: usize,
) -> Result<Duration, String> {
    let id = runner_contract::SessionId::new_random().to_string();
    let ran = command(codehands, image, repo, home, runs)
        .args(["run", ".", "Fix the failing test.", "--agent", "fake"])
        .args(["--then", "keep", "--engine", "swarm", "--session-id", &id])
        .status()
        .map_err(|e| e.to_string())?;
    if !ran.success() {
        return Err("the first swarm run (which gives the pool's kind of box) failed".into());
    }
    let plan = std::fs::read(home.join("runs").join(&id).join("remote.json"))
        .map_err(|e| format!("the first run's plan: {e}"));
    let _ = command(codehands, image, repo, home, runs)
        .args(["reject", &id])
        .status();
    let plan = engine_docker::RemotePlan::from_json(&plan?)?;
    let started = Instant::now();
    engine_docker::fill_pool(&plan, runs as u32)?;
    pool_ready(image, runs)?;
    Ok(started.elapsed())
}

/// Waits until the swarm holds `runs` warm boxes, all running, and no box a run took;
/// how long that took. The wait lasts as long as the swarm makes progress (a box more
/// running, or one fewer left over), and fails after [`STALLED`] without any.
fn pool_ready(image: &str, runs: usize) -> Result<Duration, String> {
    const STALLED: Duration = Duration::from_secs(180);
    let started = Instant::now();
    let count = |args: &[&str]| docker(args).map(|out| out.split_whitespace().count());
    // The bench's boxes: those of its image.
    let ours = format!("label=codehands.image={image}");
    let mut last = (usize::MAX, usize::MAX);
    let mut progress = Instant::now();
    loop {
        let running = count(&[
            "ps",
            "--quiet",
            "--filter",
            "label=codehands.pool",
            "--filter",
            &ours,
            "--filter",
            "status=running",
        ])?;
        let services = count(&[
            "service",
            "ls",
            "--quiet",
            "--filter",
            "label=codehands.pool",
            "--filter",
            &ours,
        ])?;
        if running >= runs && services == running {
            return Ok(started.elapsed());
        }
        if (running, services) != last {
            last = (running, services);
            progress = Instant::now();
        }
        if progress.elapsed() > STALLED {
            return Err(format!(
                "the pool stalled: {running} warm boxes running of {services} (want {runs})"
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn command(codehands: &Path, image: &str, repo: &Path, home: &Path, runs: usize) -> Command {
    let mut cmd = Command::new(codehands);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEHANDS_HOME", home)
        .env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", "0")
        .env("CODEHANDS_REMOTE_IMAGE", image)
        .env("CODEHANDS_SWARM_POOL", runs.to_string())
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(host) = std::env::var_os("DOCKER_HOST") {
        cmd.env("DOCKER_HOST", host);
    }
    cmd
}

fn docker(args: &[&str]) -> Result<String, String> {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// This engine as a swarm manager for the bench: made one when it was in no swarm, and left
/// again then (only then).
struct Swarm {
    joined: bool,
}

impl Swarm {
    fn join() -> Result<Self, String> {
        let state = docker(&[
            "info",
            "--format",
            "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}",
        ])?;
        match state.trim() {
            "active true" => Ok(Self { joined: false }),
            "inactive false" => {
                docker(&["swarm", "init", "--advertise-addr", "127.0.0.1"])?;
                Ok(Self { joined: true })
            }
            other => Err(format!(
                "this engine is in a swarm it does not manage ({other}): run the bench on a manager"
            )),
        }
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        if self.joined {
            let _ = docker(&["swarm", "leave", "--force"]);
        }
    }
}
