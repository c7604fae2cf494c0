//! The crash suite: a child `codehands approve`, `reject` or `run` is killed with SIGKILL at a
//! random instant of its life (fixed seeds, printed), then the next command or `recover` runs.
//! Every case ends approved with its commit, rejected with nothing left, failed with nothing
//! left, or still awaiting and approvable: never a lost commit, never a stuck session.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::World;

/// Cases per operation.
const CASES: u64 = 50;

/// A small deterministic generator (xorshift64*), so every case is named by its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A duration in `[0, max)`.
    fn below(&mut self, max: Duration) -> Duration {
        let micros = max.as_micros().max(1) as u64;
        Duration::from_micros(self.next() % micros)
    }
}

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", "0")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn run_args(id: &str) -> Vec<String> {
    [
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
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Runs `args` to the end and says how long it took (to pick kill instants from).
fn timed(world: &World, args: &[String]) -> Duration {
    let t = Instant::now();
    ok(codehands(world).args(args).output().unwrap(), &args[0]);
    t.elapsed()
}

/// Starts `args` and kills it with SIGKILL after `after` (if it is still running then).
fn kill_after(world: &World, args: &[String], after: Duration) {
    let mut child = codehands(world)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    child.wait().unwrap();
}

/// `codehands recover`, which must clean everything it finds.
fn recover(world: &World, case: &str) {
    let out = ok(
        codehands(world)
            .args(["recover", "--json"])
            .output()
            .unwrap(),
        &format!("{case}: recover"),
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["cleanupErrors"],
        serde_json::json!([]),
        "{case}: recover left errors: {report}"
    );
}

/// A finished session waiting for approval; its id.
fn awaiting(world: &World) -> String {
    let id = support::new_id().to_string();
    ok(
        codehands(world).args(run_args(&id)).output().unwrap(),
        "run",
    );
    id
}

fn record(world: &World, id: &str) -> Option<serde_json::Value> {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    let bytes = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&bytes).expect("a whole record"))
}

fn field(record: &serde_json::Value, name: &str) -> String {
    record[name].as_str().unwrap_or_default().to_owned()
}

fn registered(world: &World, worktree: &Path) -> bool {
    let listing = world.git(&["worktree", "list", "--porcelain"]);
    let name = worktree.file_name().unwrap().to_string_lossy().into_owned();
    listing
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .any(|p| p.ends_with(&name))
}

fn branch_tip(world: &World, branch: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(&world.repo)
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Checks the session ended in a legal, usable state; one still awaiting is approved (or
/// rejected, `reject`) here to prove it can be. `case` names the case in failures.
fn check_settled(world: &World, id: &str, case: &str, reject: bool) {
    let Some(rec) = record(world, id) else {
        // A run killed before its record was whole: nothing of it may be left.
        let short = &id[..8];
        assert!(
            world.branches().iter().all(|b| !b.ends_with(short)),
            "{case}: a branch is left: {:?}",
            world.branches()
        );
        assert!(
            world.worktree_dirs().iter().all(|d| !d.ends_with(short)),
            "{case}: a worktree folder is left"
        );
        return;
    };
    let worktree = PathBuf::from(field(&rec, "worktreePath"));
    let branch = field(&rec, "branch");
    let base = field(&rec, "baseCommit");
    match field(&rec, "state").as_str() {
        "approved" => {
            let commit = field(&rec, "commit");
            assert_eq!(branch_tip(world, &branch), Some(commit.clone()), "{case}");
            assert_eq!(
                world
                    .git(&["rev-list", "--count", &format!("{base}..{commit}")])
                    .trim(),
                "1",
                "{case}"
            );
            assert!(
                world.git(&["show", &commit]).contains("getMonth() + 1"),
                "{case}"
            );
            assert!(!worktree.exists(), "{case}: worktree left after approve");
            assert!(!registered(world, &worktree), "{case}: still registered");
        }
        "rejected" | "failed" => {
            assert!(!worktree.exists(), "{case}: worktree left");
            assert!(!registered(world, &worktree), "{case}: still registered");
            assert_eq!(branch_tip(world, &branch), None, "{case}: branch left");
        }
        "awaiting_approval" => {
            assert!(worktree.is_dir(), "{case}: awaiting without its worktree");
            assert_eq!(branch_tip(world, &branch), Some(base), "{case}");
            let (verb, state) = if reject {
                ("reject", "rejected")
            } else {
                ("approve", "approved")
            };
            let mut args = vec![verb.to_owned(), id.to_owned()];
            if !reject {
                args.extend(["-m".to_owned(), "Fix the month".to_owned()]);
            }
            ok(
                codehands(world).args(&args).output().unwrap(),
                &format!("{case}: {verb} after the crash"),
            );
            assert_eq!(field(&record(world, id).unwrap(), "state"), state, "{case}");
            check_settled(world, id, case, reject);
        }
        other => panic!("{case}: the session is left {other}"),
    }
}

/// Nothing is left over: only the person's checkout is registered, no locked entry, and no
/// folder under the home's worktrees.
fn check_clean(world: &World, what: &str) {
    let listing = world.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(listing.matches("worktree ").count(), 1, "{what}: {listing}");
    assert!(
        world.worktree_dirs().is_empty(),
        "{what}: {:?}",
        world.worktree_dirs()
    );
    assert_eq!(
        world
            .branches()
            .iter()
            .filter(|b| !b.starts_with("codehands/"))
            .count(),
        1
    );
}

/// Approve or reject killed at random instants, then the same command again or `recover`.
fn decision_suite(verb: &str, reject: bool, seed0: u64) {
    let world = World::demo();
    let first = awaiting(&world);
    let mut args = vec![verb.to_owned(), first.clone()];
    if !reject {
        args.extend(["-m".to_owned(), "Fix the month".to_owned()]);
    }
    // The window: a little longer than the whole command, start-up included.
    let window = timed(&world, &args).mul_f64(1.3);
    for case in 0..CASES {
        let seed = seed0 + case;
        let mut rng = Rng::new(seed);
        let id = awaiting(&world);
        args[1] = id.clone();
        let after = rng.below(window);
        let name = format!("{verb} seed {seed} killed after {after:?}");
        println!("{name}");
        kill_after(&world, &args, after);
        if rng.next().is_multiple_of(2) {
            recover(&world, &name);
        } else {
            // The same command again: it settles what was cut short, then acts (an approve
            // that had finished is refused as approving twice).
            let again = codehands(&world).args(&args).output().unwrap();
            let state = record(&world, &id).map(|r| field(&r, "state"));
            assert!(
                again.status.success()
                    || state.as_deref() == Some(if reject { "rejected" } else { "approved" }),
                "{name}: {verb} again failed: {}",
                String::from_utf8_lossy(&again.stderr)
            );
        }
        check_settled(&world, &id, &name, reject);
    }
    if reject {
        check_clean(&world, verb);
    }
}

#[test]
fn approve_killed_at_any_instant_never_loses_a_commit_or_sticks() {
    decision_suite("approve", false, 1000);
}

#[test]
fn reject_killed_at_any_instant_ends_rejected_or_awaiting() {
    decision_suite("reject", true, 2000);
}

#[test]
fn run_killed_at_any_instant_ends_settled_after_recover() {
    let world = World::demo();
    let calibration = support::new_id().to_string();
    let window = timed(&world, &run_args(&calibration)).mul_f64(1.1);
    ok(
        codehands(&world)
            .args(["reject", &calibration])
            .output()
            .unwrap(),
        "reject the calibration run",
    );
    for case in 0..CASES {
        let seed = 3000 + case;
        let mut rng = Rng::new(seed);
        let id = support::new_id().to_string();
        let after = rng.below(window);
        let name = format!("run seed {seed} killed after {after:?}");
        println!("{name}");
        kill_after(&world, &run_args(&id), after);
        recover(&world, &name);
        // A run whose turn was planned goes on without the killed command: follow it to
        // its end (which also takes it over if its supervisor is gone).
        if record(&world, &id).is_some() {
            ok(
                codehands(&world)
                    .args(["events", &id, "--follow", "--json"])
                    .output()
                    .unwrap(),
                &format!("{name}: follow it to its end"),
            );
        }
        let reject = rng.next().is_multiple_of(2);
        check_settled(&world, &id, &name, reject);
    }
    // Everything is settled, and a new run still works.
    let id = awaiting(&world);
    ok(
        codehands(&world).args(["reject", &id]).output().unwrap(),
        "a run after the crashes",
    );
    let listing = world.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(listing.matches("worktree ").count(), 1, "{listing}");
    assert!(
        world.worktree_dirs().is_empty(),
        "{:?}",
        world.worktree_dirs()
    );
}
