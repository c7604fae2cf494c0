//! `cargo xtask test`: the one command that runs every test on a fresh machine.
//!
//! It first installs what the tests need (each install step is cached, so a
//! second run is quick), then runs `cargo test --workspace --no-fail-fast` with any extra
//! arguments (one failing test binary does not hide the others), echoing the tests' output
//! and ending with one line that sums every binary up.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// The install steps, in order: each is an xtask task of its own.
const INSTALL_STEPS: &[&str] = &["system", "agents", "images"];

/// `cargo xtask install`: every install step, each cached.
pub fn install(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask install".into());
    }
    for step in INSTALL_STEPS {
        cargo(&["xtask", step], &[])?;
    }
    Ok(())
}

/// `cargo xtask test [ARGS…]`: installs, then tests.
pub fn run(args: &[String]) -> Result<(), String> {
    let began = std::time::Instant::now();
    install(&[])?;
    let tests_began = std::time::Instant::now();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new(&cargo)
        .args(["test", "--workspace", "--no-fail-fast"])
        .args(args)
        .current_dir(crate::workspace_root())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    let mut tally = Tally::default();
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("cannot read the tests' output: {e}"))?;
        println!("{line}");
        tally.read(&line);
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for {cargo}: {e}"))?;
    println!("{}", tally.summary());
    // How long a cold run takes is worth knowing at a glance (README, first lines).
    println!(
        "build and tests {:.0} s; with the install steps {:.0} s",
        tests_began.elapsed().as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo test --workspace --no-fail-fast` failed ({status})"
        ))
    }
}

/// The sum of every test binary's `test result:` line, and the names of the failed tests.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
    binaries: u64,
    failures: Vec<String>,
}

impl Tally {
    /// Takes one line of `cargo test`'s standard output into the sum.
    fn read(&mut self, line: &str) {
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.strip_suffix(" ... FAILED"))
        {
            self.failures.push(name.to_owned());
        }
        let Some(counts) = line.strip_prefix("test result: ") else {
            return;
        };
        self.binaries += 1;
        for part in counts.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else {
                continue;
            };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }

    /// The one line that ends the run: `N passed, N failed, N ignored (B test binaries)`,
    /// then the failed tests by name.
    fn summary(&self) -> String {
        let mut out = format!(
            "{} passed, {} failed, {} ignored ({} test binaries)",
            self.passed, self.failed, self.ignored, self.binaries
        );
        for name in &self.failures {
            out.push_str(&format!("\n  failed: {name}"));
        }
        out
    }
}

fn cargo(fixed: &[&str], extra: &[String]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(fixed)
        .args(extra)
        .current_dir(crate::workspace_root())
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", fixed.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_sums_every_binary_and_names_the_failures() {
        let mut tally = Tally::default();
        for line in [
            "running 2 tests",
            "test a::one ... ok",
            "test a::two ... FAILED",
            "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            "test result: ok. 7 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1.20s",
        ] {
            tally.read(line);
        }
        assert_eq!(
            tally.summary(),
            "8 passed, 1 failed, 2 ignored (2 test binaries)\n  failed: a::two"
        );
    }
}
