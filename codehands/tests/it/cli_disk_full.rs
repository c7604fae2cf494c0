//! A full disk in the middle of a run. The home sits on a small private tmpfs that is filled
//! at many instants of a `codehands run` of the fake agent (fixed seeds, printed): by leaving
//! only so many bytes free before the start (the run meets the full disk wherever its writes
//! reach that much: making the worktree, before the spawn, while the agent prints, after
//! `task.finished`), and by filling it all while the run goes on. Each time the command ends
//! within a bound, a failure names the full disk, `sessions` lists every other session and
//! `events --follow` ends; once space is freed, `recover` leaves the session settled (awaiting
//! approval with its change, or failed naming the disk, or never made) with seq 1..N and no
//! torn line. Also: a repo path holding a line break is refused before anything is made, and
//! a session whose log holds a torn line never stops the other sessions' commands.

use crate::support;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::World;

/// How long any command may take before it counts as hanging (a disk that stays full must
/// never keep one waiting).
const BOUND: Duration = Duration::from_secs(90);
/// Cases that leave only so many bytes free before the start.
const BYTE_CASES: u64 = 24;
/// Cases that fill the disk while the run goes on.
const TIMED_CASES: u64 = 12;
/// The fake agent's pause between lines in the timed cases, so the fill can land anywhere.
const TIMED_DELAY_MS: u64 = 25;

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
    /// A fraction in `[0, 1)`.
    fn fraction(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A private tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mode 0700) at `path`; `None` with a printed reason when
    /// this machine does not let us (a failure under CI=true, where root is given).
    fn mount(path: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(path).unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(path)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Self {
                path: path.to_owned(),
            }),
            Ok(out) => {
                runner_testkit::skip(&format!(
                    "cannot mount a tmpfs to fill ({}): run the test as root",
                    support::text(&out.stderr).trim()
                ));
                None
            }
            Err(e) => {
                runner_testkit::skip(&format!("cannot run mount ({e}): install it"));
                None
            }
        }
    }

    /// Remounts it read-only (`false`: writable again).
    fn read_only(&self, ro: bool) {
        let opts = if ro { "remount,ro" } else { "remount,rw" };
        let out = Command::new("mount")
            .args(["-o", opts])
            .arg(&self.path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount -o {opts}: {}",
            support::text(&out.stderr)
        );
    }

    /// The bytes free on it.
    fn free(&self) -> u64 {
        let stat = nix::sys::statvfs::statvfs(&self.path).unwrap();
        stat.blocks_available() * stat.fragment_size()
    }

    /// Takes all its free space but `leave` bytes, in a file of its own.
    fn fill(&self, leave: u64) {
        use nix::fcntl::{FallocateFlags, fallocate};
        let path = self.path.join("fill");
        let file = File::options()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        // The run may take some meanwhile: ask again for what is left until nothing is.
        for _ in 0..1000 {
            let free = self.free();
            if free <= leave {
                return;
            }
            let at = file.metadata().unwrap().len() as i64;
            match fallocate(&file, FallocateFlags::empty(), at, (free - leave) as i64) {
                Ok(()) | Err(nix::errno::Errno::ENOSPC) => {}
                Err(e) => panic!("cannot fill {}: {e}", self.path.display()),
            }
        }
    }

    /// Gives the space taken by [`Tmpfs::fill`] back.
    fn free_up(&self) {
        let _ = std::fs::remove_file(self.path.join("fill"));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.path.join("fill"));
        let done = Command::new("umount").arg(&self.path).status();
        if !done.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

/// The demo world with its home on a fresh tmpfs of `size`.
fn world_on_tmpfs(size: &str) -> Option<(World, Tmpfs)> {
    let mut world = World::demo();
    let disk = Tmpfs::mount(&world.dir.path().join("disk"), size)?;
    world.home = runner_contract::Home::new(disk.path.join("home"));
    Some((world, disk))
}

fn codehands(world: &World, delay_ms: u64) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", delay_ms.to_string())
        .env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .stdin(Stdio::null());
    cmd
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

/// Runs `cmd` to its end, its output in files off the tmpfs (a pipe that fills up would
/// hold it); a command still running after [`BOUND`] is killed and fails the test.
fn bounded(world: &World, cmd: &mut Command, what: &str) -> Output {
    let out_path = world.dir.path().join("out");
    let err_path = world.dir.path().join("err");
    let mut child = cmd
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, what);
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read(&err_path).unwrap(),
    }
}

fn wait_bounded(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {BOUND:?}: it waits on the full disk");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn all_output(out: &Output) -> String {
    format!(
        "{}{}",
        support::text(&out.stdout),
        support::text(&out.stderr)
    )
}

/// Whether `text` names a full (or read-only) disk the way the runner does.
fn names_the_disk(text: &str) -> bool {
    text.contains("the disk holding") && (text.contains("is full") || text.contains("read-only"))
}

fn record(world: &World, id: &str) -> Option<serde_json::Value> {
    let bytes = std::fs::read(world.home.sessions_dir().join(format!("{id}.json"))).ok()?;
    Some(serde_json::from_slice(&bytes).expect("a whole record"))
}

fn field(record: &serde_json::Value, name: &str) -> String {
    record[name].as_str().unwrap_or_default().to_owned()
}

/// `sessions --json` (the disk may still be full): every session in `ids` is listed.
fn lists_every_session(world: &World, ids: &[String], case: &str) {
    let out = bounded(
        world,
        codehands(world, 0).args(["sessions", "--json"]),
        &format!("{case}: sessions"),
    );
    assert!(
        out.status.success(),
        "{case}: sessions failed: {}",
        all_output(&out)
    );
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for id in ids {
        assert!(
            listed.iter().any(|r| r["sessionId"] == id.as_str()),
            "{case}: sessions does not list {id}: {}",
            all_output(&out)
        );
    }
}

/// The session's files hold whole lines only: the event log numbered 1..N.
fn check_logs(world: &World, id: &str, case: &str) {
    let dir = world
        .home
        .run_dir(&runner_contract::SessionId::parse(id).unwrap());
    for name in ["events.jsonl", "transcript.jsonl", "inbox.jsonl"] {
        let bytes = std::fs::read(dir.join(name)).unwrap_or_default();
        assert!(
            bytes.is_empty() || bytes.ends_with(b"\n"),
            "{case}: {name} ends with a torn line"
        );
    }
    let bytes = std::fs::read(dir.join("events.jsonl")).unwrap_or_default();
    let events: Vec<runner_contract::Event> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l)
                .unwrap_or_else(|e| panic!("{case}: a torn line in events.jsonl ({e})"))
        })
        .collect();
    support::assert_contiguous(&events);
}

/// The session after `recover`: awaiting approval with its change (then approved or
/// rejected here, to prove it can be), failed naming the disk with nothing left, or never
/// made with nothing left. Returns whether it exists.
fn check_settled(world: &World, id: &str, case: &str, approve: bool) -> bool {
    let short = &id[..8];
    let Some(rec) = record(world, id) else {
        assert!(
            world.branches().iter().all(|b| !b.ends_with(short)),
            "{case}: a branch is left: {:?}",
            world.branches()
        );
        assert!(
            world.worktree_dirs().iter().all(|d| !d.ends_with(short)),
            "{case}: a worktree folder is left"
        );
        let run_dir = world.home.root().join("runs").join(id);
        assert!(!run_dir.exists(), "{case}: a run folder is left");
        let registered = world.git(&["worktree", "list", "--porcelain"]);
        assert!(
            !registered.contains(short),
            "{case}: still registered: {registered}"
        );
        return false;
    };
    check_logs(world, id, case);
    let worktree = PathBuf::from(field(&rec, "worktreePath"));
    match field(&rec, "state").as_str() {
        "awaiting_approval" => {
            let fixed = std::fs::read_to_string(worktree.join("src/date.js")).unwrap();
            assert!(
                fixed.contains("getMonth() + 1"),
                "{case}: the change is not there"
            );
            let args: Vec<&str> = if approve {
                vec!["approve", id, "-m", "Fix the month"]
            } else {
                vec!["reject", id]
            };
            let out = bounded(world, codehands(world, 0).args(&args), case);
            assert!(out.status.success(), "{case}: {}", all_output(&out));
        }
        "failed" => {
            let failure = field(&rec, "failure");
            assert!(
                names_the_disk(&failure),
                "{case}: failed for another reason: {failure}"
            );
            assert!(
                !worktree.exists(),
                "{case}: the failed session's worktree is left"
            );
        }
        other => panic!("{case}: the session is left {other}"),
    }
    true
}

/// When a case fills the disk.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// Before the start, leaving this many bytes.
    Leaving(u64),
    /// All of it, this long after the start (the agent pausing between lines).
    After(Duration),
}

/// One run with the disk filled at one instant; `others` are the sessions there are (this
/// one joins them), and one awaiting approval is approved (`approve`) or rejected.
fn one_case(
    world: &World,
    disk: &Tmpfs,
    case: &str,
    fill: Fill,
    others: &mut Vec<String>,
    approve: bool,
) {
    println!("{case}");
    let id = support::new_id().to_string();
    let delay = match fill {
        Fill::Leaving(leave) => {
            disk.fill(leave);
            0
        }
        Fill::After(_) => TIMED_DELAY_MS,
    };
    let out_path = world.dir.path().join("run-out");
    let err_path = world.dir.path().join("run-err");
    let mut child = codehands(world, delay)
        .args(run_args(&id))
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    if let Fill::After(after) = fill {
        std::thread::sleep(after);
        disk.fill(0);
    }
    let status = wait_bounded(&mut child, &format!("{case}: run"));
    let said = format!(
        "{}{}",
        std::fs::read_to_string(&out_path).unwrap(),
        std::fs::read_to_string(&err_path).unwrap()
    );
    if !status.success() {
        assert!(
            names_the_disk(&said),
            "{case}: the run failed without naming the disk: {said}"
        );
    }
    // Still full: the other sessions are all there, and the session's events end.
    lists_every_session(world, others, case);
    if record(world, &id).is_some() {
        let out = bounded(
            world,
            codehands(world, 0).args(["events", &id, "--follow", "--json"]),
            &format!("{case}: events --follow"),
        );
        assert!(
            out.status.success() || names_the_disk(&all_output(&out)),
            "{case}: events --follow: {}",
            all_output(&out)
        );
    }
    disk.free_up();
    let out = bounded(world, codehands(world, 0).args(["recover", "--json"]), case);
    assert!(
        out.status.success(),
        "{case}: recover: {}",
        all_output(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["cleanupErrors"],
        serde_json::json!([]),
        "{case}: {report}"
    );
    assert_eq!(
        report["unreadable"],
        serde_json::json!([]),
        "{case}: {report}"
    );
    let state = record(world, &id).map_or("never made".to_owned(), |r| field(&r, "state"));
    println!("  → {state}");
    if check_settled(world, &id, case, approve) {
        others.push(id);
    }
}

#[test]
fn a_disk_that_fills_at_any_instant_of_a_run_ends_it_clearly_and_recover_settles_it() {
    let Some((world, disk)) = world_on_tmpfs("16m") else {
        return;
    };
    // Calibration: what a whole run takes, in bytes and (with the timed cases' pace) in time.
    let first = support::new_id().to_string();
    let before = disk.free();
    let started = Instant::now();
    let out = bounded(
        &world,
        codehands(&world, TIMED_DELAY_MS).args(run_args(&first)),
        "calibration",
    );
    let took = started.elapsed();
    assert!(out.status.success(), "calibration: {}", all_output(&out));
    let used = before.saturating_sub(disk.free());
    let mut others = vec![first];
    // Up to a little more than a run and the room it keeps for its end: from a start
    // refused outright to a run that ends before the disk is full.
    let window = used + (192 << 10);
    for case in 0..BYTE_CASES {
        let seed = 4000 + case;
        let mut rng = Rng::new(seed);
        let leave = ((case as f64 + rng.fraction()) / BYTE_CASES as f64 * window as f64) as u64;
        let name = format!("seed {seed}: {leave} bytes left before the start");
        one_case(
            &world,
            &disk,
            &name,
            Fill::Leaving(leave),
            &mut others,
            rng.next().is_multiple_of(2),
        );
    }
    let span = took.mul_f64(1.2);
    for case in 0..TIMED_CASES {
        let seed = 5000 + case;
        let mut rng = Rng::new(seed);
        let after = span.mul_f64((case as f64 + rng.fraction()) / TIMED_CASES as f64);
        let name = format!("seed {seed}: the disk filled {after:?} after the start");
        one_case(
            &world,
            &disk,
            &name,
            Fill::After(after),
            &mut others,
            rng.next().is_multiple_of(2),
        );
    }
    // A read-only disk is named too, and nothing is made.
    disk.read_only(true);
    let id = support::new_id().to_string();
    let out = bounded(
        &world,
        codehands(&world, 0).args(run_args(&id)),
        "read-only",
    );
    assert!(!out.status.success());
    let said = all_output(&out);
    assert!(
        said.contains("the disk holding") && said.contains("read-only"),
        "{said}"
    );
    lists_every_session(&world, &others, "read-only");
    disk.read_only(false);
    check_settled(&world, &id, "read-only", false);
    // And with room again, a run works.
    let id = support::new_id().to_string();
    let out = bounded(&world, codehands(&world, 0).args(run_args(&id)), "after");
    assert!(
        out.status.success(),
        "a run after the full disk: {}",
        all_output(&out)
    );
}

#[test]
fn a_repo_path_with_a_line_break_is_refused_before_anything_is_made() {
    let world = World::demo();
    let repo = world.dir.path().join("demo\nrepo");
    std::fs::create_dir_all(&repo).unwrap();
    for (path, content) in runner_fake::demo_repo::FILES {
        let path = repo.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    support::git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    support::git(&repo, &["add", "--all"]);
    support::git(
        &repo,
        &[
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "commit",
            "--quiet",
            "-m",
            "base",
        ],
    );
    let id = support::new_id().to_string();
    let mut args = run_args(&id);
    args[1] = repo.display().to_string();
    let out = support::run(codehands(&world, 0).args(&args));
    assert!(!out.status.success());
    let said = support::text(&out.stderr);
    assert!(said.contains("line break"), "{said}");
    assert!(said.contains("rename or move the repository"), "{said}");
    // Nothing made: no record, run folder, worktree, branch or registration.
    let empty = |dir: PathBuf| std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
    assert!(empty(world.home.sessions_dir()), "a record was made");
    assert!(
        empty(world.home.root().join("runs")),
        "a run folder was made"
    );
    assert!(empty(world.home.worktrees_dir()), "a worktree was made");
    assert_eq!(
        support::git(&repo, &["branch", "--format=%(refname:short)"]).trim(),
        "main"
    );
    assert!(
        !repo.join(".git/worktrees").exists(),
        "a worktree was registered"
    );
}

#[test]
fn a_torn_line_in_one_sessions_log_never_stops_the_others() {
    let world = World::demo();
    let ok = |args: &[&str]| {
        let out = bounded(&world, codehands(&world, 0).args(args), &args.join(" "));
        assert!(out.status.success(), "{args:?}: {}", all_output(&out));
        out
    };
    let (good, torn) = (support::new_id().to_string(), support::new_id().to_string());
    ok(&run_args(&good)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    ok(&run_args(&torn)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    // The second session as an older codehands left it: running, its log with a line cut
    // short in the middle and more events after it.
    let torn_id = runner_contract::SessionId::parse(&torn).unwrap();
    let dir = world.home.run_dir(&torn_id);
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let mut lines: Vec<String> = log.lines().map(str::to_owned).collect();
    let half = lines[2].len() / 2;
    lines[2].truncate(half);
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let path = world.home.sessions_dir().join(format!("{torn}.json"));
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    rec["state"] = "running".into();
    std::fs::write(&path, serde_json::to_vec(&rec).unwrap()).unwrap();
    let plan = serde_json::json!({
        "turn": 1, "prompt": "Fix the failing test.", "resumeFrom": null, "verify": false, "seqStart": 0
    });
    std::fs::write(dir.join("turn.json"), plan.to_string()).unwrap();

    // Both are listed, the torn one as unreadable with why.
    let out = ok(&["sessions", "--json"]);
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let said = support::text(&out.stderr);
    assert!(
        said.contains("unreadable") && said.contains("line 3 of the event log"),
        "{said}"
    );
    let table = support::text(&ok(&["sessions"]).stdout);
    assert!(
        table.contains(&format!("unreadable: runs/{torn}/events.jsonl: line 3")),
        "{table}"
    );
    // recover reports it and goes on; the other session's commands work.
    let report: serde_json::Value =
        serde_json::from_slice(&ok(&["recover", "--json"]).stdout).unwrap();
    assert_eq!(report["cleanupErrors"], serde_json::json!([]), "{report}");
    assert_eq!(
        report["unreadable"][0]["sessionId"],
        torn.as_str(),
        "{report}"
    );
    ok(&["events", &good]);
    ok(&["diff", &good]);
    // Its own commands say what is wrong, and end.
    for args in [
        vec!["events", torn.as_str()],
        vec!["events", torn.as_str(), "--follow"],
    ] {
        let out = bounded(&world, codehands(&world, 0).args(&args), &args.join(" "));
        assert!(!out.status.success(), "{args:?}");
        assert!(
            all_output(&out).contains("line 3 of the event log"),
            "{args:?}: {}",
            all_output(&out)
        );
    }
    let out = ok(&["gc", "--older-than", "0s", "--json"]);
    let gc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(gc["removed"], serde_json::json!([good]), "{gc}");
}

#[test]
fn a_turn_whose_end_does_not_fit_is_left_for_recover_and_nothing_waits_on_it() {
    let Some((world, disk)) = world_on_tmpfs("16m") else {
        return;
    };
    let id = support::new_id().to_string();
    let mut args = run_args(&id);
    args.push("--detach".into());
    let out = bounded(
        &world,
        codehands(&world, 0)
            .env("CODEHANDS_FAKE_MODE", "sleep")
            .args(&args),
        "run --detach",
    );
    assert!(out.status.success(), "{}", all_output(&out));
    // Its supervisor used the turn's reserve on a full disk and died; the agent died too,
    // without a result, and the disk stays full.
    let supervisor = support::supervisor_of(&id).expect("a detached supervisor");
    kill(supervisor);
    let dir = world
        .home
        .run_dir(&runner_contract::SessionId::parse(&id).unwrap());
    std::fs::remove_file(dir.join("reserve")).unwrap();
    let agent: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("agent.json")).unwrap()).unwrap();
    let agent = agent["process"]["pid"].as_i64().unwrap() as i32;
    kill(agent);
    // Gone, and what it held open given back, before the disk is filled: the agent's box may
    // outlive the process the record names by a moment, and a deleted file (the reserve) still
    // held open frees its space only when its last holder ends. Space freed after the fill
    // would let the turn's end fit after all.
    let deadline = Instant::now() + BOUND;
    while holds_a_file_under(&disk.path) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !holds_a_file_under(&disk.path),
        "a process still holds a file on the test's disk"
    );
    disk.fill(0);
    // Following it ends, naming the disk; the list goes on.
    let out = bounded(
        &world,
        codehands(&world, 0).args(["events", &id, "--follow", "--json"]),
        "events --follow",
    );
    assert!(!out.status.success());
    assert!(names_the_disk(&all_output(&out)), "{}", all_output(&out));
    lists_every_session(&world, std::slice::from_ref(&id), "full");
    assert_eq!(field(&record(&world, &id).unwrap(), "state"), "running");
    // With room again, recover ends it as the disk's doing, with every line whole.
    disk.free_up();
    let out = bounded(
        &world,
        codehands(&world, 0).args(["recover", "--json"]),
        "recover",
    );
    assert!(out.status.success(), "{}", all_output(&out));
    let rec = record(&world, &id).unwrap();
    assert_eq!(field(&rec, "state"), "failed");
    check_settled(&world, &id, "recover", false);
}

/// Whether any process (ours excepted) holds a file open under `dir`.
fn holds_a_file_under(dir: &Path) -> bool {
    let me = std::process::id().to_string();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            return false;
        }
        std::fs::read_dir(entry.path().join("fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(dir)))
        })
    })
}

fn kill(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}
