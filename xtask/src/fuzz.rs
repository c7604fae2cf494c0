//! `cargo xtask fuzz [TARGET] [--seconds N] [--seconds-for TARGET=N]…`: runs the cargo-fuzz
//! targets of `fuzz/` (libFuzzer, nightly) for N seconds each and prints executions, coverage
//! and crashes. `--seconds-for` gives one target its own budget: CI gives `patch`, which
//! runs the `git` program several times per input, less than the in-process targets.
//!
//! cargo-fuzz is installed once into `$CODEHANDS_CACHE/tools` (pinned). Each target's
//! corpus (`fuzz/corpus/<target>/`, not committed) is seeded from the agents' fixtures and
//! well-formed files (`fuzz_harness::seeds`) before it runs. A crash makes the task fail;
//! its input is copied to `fuzz/regressions/<target>/`, which the stable test
//! `fuzz-harness/tests/regressions.rs` replays: commit it with the fix.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::workspace_root;

/// The cargo-fuzz release installed into the cache.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;

/// What one target's run came to.
struct Outcome {
    target: String,
    runs: Option<u64>,
    coverage: Option<String>,
    crashes: Vec<PathBuf>,
    failed: bool,
}

/// The command line of the task.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    /// The one target to run, or every target.
    only: Option<String>,
    /// Seconds per target.
    seconds: u64,
    /// Targets with a budget of their own.
    seconds_for: Vec<(String, u64)>,
}

impl Args {
    fn seconds_of(&self, target: &str) -> u64 {
        self.seconds_for
            .iter()
            .rev()
            .find(|(name, _)| name == target)
            .map_or(self.seconds, |(_, n)| *n)
    }
}

/// Runs the task.
pub fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let only = &args.only;
    let targets: Vec<&str> = match only {
        Some(name) if fuzz_harness::TARGETS.contains(&name.as_str()) => vec![name.as_str()],
        Some(name) => {
            return Err(format!(
                "no fuzz target {name:?}: name one of {}",
                fuzz_harness::TARGETS.join(", ")
            ));
        }
        None => fuzz_harness::TARGETS.to_vec(),
    };
    ensure_nightly()?;
    let tools = install_cargo_fuzz()?;
    let fuzz_dir = workspace_root().join("fuzz");

    let started = Instant::now();
    println!("fuzz: building the targets (nightly, address sanitizer)");
    let mut build = fuzz_command(&tools, &fuzz_dir);
    build.arg("build");
    if let [one] = targets.as_slice() {
        build.arg(one);
    }
    check_status(build.status(), "cargo +nightly fuzz build")?;
    println!("fuzz: built in {:.0?}", started.elapsed());

    let mut outcomes = Vec::new();
    for target in targets {
        outcomes.push(run_target(
            &tools,
            &fuzz_dir,
            target,
            args.seconds_of(target),
        )?);
    }

    println!(
        "\n{:<22} {:>12} {:>10}  {:<24}",
        "target", "executions", "crashes", "coverage"
    );
    for o in &outcomes {
        let runs = o.runs.map_or("?".to_owned(), |n| n.to_string());
        let coverage = o.coverage.as_deref().unwrap_or("?");
        println!(
            "{:<22} {runs:>12} {:>10}  {coverage:<24}",
            o.target,
            o.crashes.len()
        );
        for crash in &o.crashes {
            println!("  kept {}", crash.display());
        }
    }
    println!("fuzz: {:.0?} in all", started.elapsed());
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.failed)
        .map(|o| o.target.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} crashed (or libFuzzer failed): the inputs are kept under fuzz/regressions/; \
             replay them with `cargo test -p fuzz-harness`, fix the crash and commit them",
            failed.join(", ")
        ))
    }
}

const USAGE: &str = "usage: cargo xtask fuzz [TARGET] [--seconds N] [--seconds-for TARGET=N]";

fn parse_args(args: &[String]) -> Result<Args, String> {
    let positive = |n: Option<&str>| n.and_then(|n| n.parse().ok()).filter(|&n: &u64| n > 0);
    let mut parsed = Args {
        only: None,
        seconds: DEFAULT_SECONDS,
        seconds_for: Vec::new(),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => {
                parsed.seconds = positive(rest.next().map(String::as_str))
                    .ok_or("--seconds takes a whole number of seconds over 0")?;
            }
            "--seconds-for" => {
                let spec = rest.next().map(String::as_str).unwrap_or_default();
                let (target, n) = spec.split_once('=').unwrap_or((spec, ""));
                if !fuzz_harness::TARGETS.contains(&target) {
                    return Err(format!(
                        "--seconds-for {spec:?}: no fuzz target {target:?}: name one of {}",
                        fuzz_harness::TARGETS.join(", ")
                    ));
                }
                let n = positive(Some(n)).ok_or_else(|| {
                    format!("--seconds-for takes TARGET=N, N seconds over 0, not {spec:?}")
                })?;
                parsed.seconds_for.push((target.to_owned(), n));
            }
            name if !name.starts_with('-') && parsed.only.is_none() => {
                parsed.only = Some(name.to_owned());
            }
            other => return Err(format!("unexpected argument {other:?}: {USAGE}")),
        }
    }
    Ok(parsed)
}

/// Installs the nightly toolchain (minimal profile) when rustup does not have it:
/// libFuzzer's instrumentation needs nightly flags.
fn ensure_nightly() -> Result<(), String> {
    let have = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .is_ok_and(|out| out.status.success());
    if have {
        return Ok(());
    }
    println!("fuzz: installing the nightly toolchain (rustup, minimal profile)");
    let status = Command::new("rustup")
        .args(["toolchain", "install", "nightly", "--profile", "minimal"])
        .status();
    check_status(status, "rustup toolchain install nightly").map_err(|e| {
        format!("{e}: cargo-fuzz needs the nightly toolchain and rustup (https://rustup.rs)")
    })
}

/// `$CODEHANDS_CACHE/tools`, with cargo-fuzz in its `bin/` (installed when missing).
fn install_cargo_fuzz() -> Result<PathBuf, String> {
    let cache = match std::env::var_os("CODEHANDS_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").ok_or("HOME is not set")?)
            .join(".cache/codehands"),
    };
    let tools = cache.join("tools");
    let stamp = tools.join(format!("cargo-fuzz-{CARGO_FUZZ_VERSION}.installed"));
    if tools.join("bin/cargo-fuzz").is_file() && stamp.is_file() {
        return Ok(tools);
    }
    println!(
        "fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION} into {}",
        tools.display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args([
            "install",
            "--locked",
            "--force",
            "--version",
            CARGO_FUZZ_VERSION,
            "--root",
        ])
        .arg(&tools)
        .arg("cargo-fuzz")
        // Its own build folder, not the workspace's.
        .env_remove("CARGO_TARGET_DIR")
        .status();
    check_status(status, "cargo install cargo-fuzz")?;
    std::fs::write(&stamp, "").map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(tools)
}

/// `cargo +nightly fuzz …` in `fuzz/`, with the cached cargo-fuzz first on PATH. The
/// variables the outer (stable) cargo set are removed so they do not pick its toolchain or
/// the workspace's target folder: fuzz/ builds into fuzz/target.
fn fuzz_command(tools: &Path, fuzz_dir: &Path) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![tools.join("bin")];
    dirs.extend(std::env::split_paths(&path));
    let mut command = Command::new("rustup");
    command
        .args(["run", "nightly", "cargo", "fuzz"])
        .current_dir(fuzz_dir)
        .env("PATH", std::env::join_paths(dirs).unwrap_or(path));
    for var in [
        "CARGO",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTDOC",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
    ] {
        command.env_remove(var);
    }
    command
}

fn run_target(
    tools: &Path,
    fuzz_dir: &Path,
    target: &str,
    seconds: u64,
) -> Result<Outcome, String> {
    let corpus = fuzz_dir.join("corpus").join(target);
    seed_corpus(&corpus, target)?;
    let artifacts = fuzz_dir.join("artifacts").join(target);
    std::fs::create_dir_all(&artifacts)
        .map_err(|e| format!("cannot make {}: {e}", artifacts.display()))?;
    let before = files_in(&artifacts);
    let log_path = fuzz_dir.join("artifacts").join(format!("{target}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot write {}: {e}", log_path.display()))?;

    println!(
        "fuzz: {target} for {seconds} s (libFuzzer's log: {})",
        log_path.display()
    );
    let status = fuzz_command(tools, fuzz_dir)
        .args(["run", target])
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        // An input this slow is a bug (quadratic work on hostile output), not a hang.
        .arg("-timeout=25")
        .arg("-rss_limit_mb=2048")
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .status()
        .map_err(|e| format!("cannot run cargo +nightly fuzz: {e}"))?;

    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let crashes = keep_crashes(fuzz_dir, target, &artifacts, &before)?;
    if !status.success() {
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        for line in tail.into_iter().rev() {
            eprintln!("  | {line}");
        }
    }
    Ok(Outcome {
        target: target.to_owned(),
        runs: executions(&text),
        coverage: coverage(&text),
        failed: !status.success() || !crashes.is_empty(),
        crashes,
    })
}

/// Writes the target's seeds into its corpus folder (kept between local runs).
fn seed_corpus(corpus: &Path, target: &str) -> Result<(), String> {
    std::fs::create_dir_all(corpus)
        .map_err(|e| format!("cannot make {}: {e}", corpus.display()))?;
    let seeds = fuzz_harness::seeds(target, &workspace_root())
        .map_err(|e| format!("cannot read the seeds of {target}: {e}"))?;
    for (name, data) in seeds {
        let path = corpus.join(format!("seed-{name}"));
        std::fs::write(&path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Copies the inputs libFuzzer left in `artifacts` during this run to
/// `fuzz/regressions/<target>/`, and returns where they went.
fn keep_crashes(
    fuzz_dir: &Path,
    target: &str,
    artifacts: &Path,
    before: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let kept_dir = fuzz_dir.join("regressions").join(target);
    let mut kept = Vec::new();
    for path in files_in(artifacts) {
        if before.contains(&path) {
            continue;
        }
        std::fs::create_dir_all(&kept_dir)
            .map_err(|e| format!("cannot make {}: {e}", kept_dir.display()))?;
        let to = kept_dir.join(path.file_name().unwrap_or_default());
        std::fs::copy(&path, &to).map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        kept.push(to);
    }
    Ok(kept)
}

/// libFuzzer's "Done N runs in S second(s)".
fn executions(log: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|line| line.strip_prefix("Done ")?.split(' ').next()?.parse().ok())
}

/// The last "cov: N ft: M" libFuzzer printed.
fn coverage(log: &str) -> Option<String> {
    let line = log.lines().rev().find(|line| line.contains(" cov: "))?;
    let mut words = line.split_whitespace();
    let mut found = Vec::new();
    while let Some(word) = words.next() {
        if word == "cov:" || word == "ft:" {
            found.push(format!("{word} {}", words.next()?));
        }
    }
    Some(found.join(" "))
}

fn check_status(
    status: std::io::Result<std::process::ExitStatus>,
    what: &str,
) -> Result<(), String> {
    match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("{what} failed ({status})")),
        Err(e) => Err(format!("cannot run {what}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_executions_and_coverage_from_libfuzzers_log() {
        let log = "#2\tINITED cov: 10 ft: 12 corp: 1/1b\n\
                   #523611\tDONE   cov: 2141 ft: 9876 corp: 812/90Kb lim: 4096 exec/s: 8726\n\
                   Done 523611 runs in 61 second(s)\n";
        assert_eq!(executions(log), Some(523_611));
        assert_eq!(coverage(log).as_deref(), Some("cov: 2141 ft: 9876"));
        assert_eq!(executions("no stats"), None);
    }

    #[test]
    fn takes_a_target_and_seconds() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = parse_args(&args(&[])).unwrap();
        assert_eq!((all.only, all.seconds), (None, DEFAULT_SECONDS));
        let one = parse_args(&args(&["records", "--seconds", "5"])).unwrap();
        assert_eq!((one.only.as_deref(), one.seconds), (Some("records"), 5));
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["a", "b"])).is_err());
    }

    #[test]
    fn a_target_can_have_its_own_seconds() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ci = parse_args(&args(&["--seconds", "30", "--seconds-for", "patch=10"])).unwrap();
        assert_eq!(ci.seconds_of("patch"), 10);
        assert_eq!(ci.seconds_of("records"), 30);
        assert!(parse_args(&args(&["--seconds-for", "nope=10"])).is_err());
        assert!(parse_args(&args(&["--seconds-for", "patch=0"])).is_err());
        assert!(parse_args(&args(&["--seconds-for", "patch"])).is_err());
    }

    #[test]
    fn every_harness_target_has_a_fuzz_binary() {
        // fuzz/ is not in the workspace, so nothing else notices a target left out of it.
        let manifest = std::fs::read_to_string(workspace_root().join("fuzz/Cargo.toml")).unwrap();
        for target in fuzz_harness::TARGETS {
            assert!(
                manifest.contains(&format!(
                    "name = \"{target}\"\npath = \"fuzz_targets/{target}.rs\""
                )),
                "fuzz/Cargo.toml has no [[bin]] for {target}"
            );
            assert!(
                workspace_root()
                    .join(format!("fuzz/fuzz_targets/{target}.rs"))
                    .is_file()
            );
        }
    }
}
