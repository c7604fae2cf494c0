//! `cargo xtask bench git`: `vcs_git::GitVcs` against the `git` program on a generated repo
//! of 20,000 files (about 100 MB): create a worktree, diff after changing 100 files and adding
//! 10, commit, remove. Prints each step's ratio and writes `target/bench/git.json`.
//!
//! The machine may be shared, so each step is timed for both sides back to back (who goes first
//! alternates), after a `sync`, and the ratio reported is the median of the per-round ratios.
//! gix is slow without optimisation, so a debug build re-runs itself as a release build.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use runner_contract::{SessionId, Vcs, WorktreeSpec};
use vcs_git::GitVcs;

const FILES: usize = 20_000;
const DIRS: usize = 200;
const LINES_PER_FILE: usize = 100;
const CHANGED: usize = 100;
const ADDED: usize = 10;
/// Bump when the generated repo's shape changes, so a cached one is rebuilt.
const REPO_VERSION: &str = "v1 20000 files x 100 lines";

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(outcome) = crate::rerun_in_release(&["bench", "git"], args) {
        return outcome;
    }
    let rounds = crate::rounds(args, 3, "git")?;
    let bench_dir = crate::workspace_root().join("target/bench");
    let repo = ensure_repo(&bench_dir.join("git-repo"))?;
    let home = bench_dir.join("git-home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;

    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let vcs = GitVcs::new();
    let mut rows: Vec<(Round, Round)> = Vec::new();
    for round in 0..rounds {
        rows.push(runtime.block_on(paired_round(&vcs, &repo, &home, round))?);
        println!("bench git: round {} of {rounds} done", round + 1);
    }
    let _ = std::fs::remove_dir_all(&home);
    git(&repo, &["worktree", "prune"])?;
    delete_bench_branches(&repo)?;

    let names = [
        ("create", "create worktree (`git worktree add -b`)"),
        (
            "diff",
            "diff after 100 changed + 10 new files (`git add -A` + `git diff --cached --stat`)",
        ),
        (
            "commit",
            "commit, worktree removal included (`git commit` + `git worktree remove`)",
        ),
        (
            "remove",
            "remove a changed worktree (`git worktree remove --force`)",
        ),
    ];
    let mut report = Vec::new();
    println!(
        "\nbench git: {FILES} files, {rounds} rounds, each step timed back to back with git's \
         (target: every ratio at most 1.0x)"
    );
    for (i, (key, what)) in names.iter().enumerate() {
        let o = median(rows.iter().map(|(o, _)| o[i]).collect());
        let t = median(rows.iter().map(|(_, t)| t[i]).collect());
        // The median of the per-round ratios: each pair ran under the same machine load.
        let mut ratios: Vec<f64> = rows
            .iter()
            .map(|(o, t)| o[i].as_secs_f64() / t[i].as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let ratio = ratios[ratios.len() / 2];
        println!(
            "  {key:<7} GitVcs {:>8.1} ms   git {:>8.1} ms   ratio {ratio:.2}x   {what}",
            ms(o),
            ms(t)
        );
        report.push(serde_json::json!({
            "step": key,
            "what": what,
            "oursMs": ms(o),
            "gitMs": ms(t),
            "ratio": ratio,
            "ratios": ratios,
        }));
    }
    // The journal approve adds around the commit: the session lock and two durable record
    // writes (`approving` with the commit id, then `approved`), against GitVcs's commit.
    let journal = journal_cost(&bench_dir.join("journal-home"))?;
    let commit = median(rows.iter().map(|(o, _)| o[2]).collect());
    let share = journal.as_secs_f64() / (commit.as_secs_f64() + journal.as_secs_f64());
    println!(
        "  journal {:>8.2} ms   approve without it {:>8.1} ms, with it {:>8.1} ms: the journal is \
         {:.1}% of approve (target: under 10%)",
        ms(journal),
        ms(commit),
        ms(commit + journal),
        share * 100.0
    );
    let json = serde_json::json!({
        "bench": "git",
        "journalMs": ms(journal),
        "approveWithoutJournalMs": ms(commit),
        "approveWithJournalMs": ms(commit + journal),
        "journalShare": share,
        "files": FILES,
        "changedFiles": CHANGED,
        "addedFiles": ADDED,
        "rounds": rounds,
        "gitVersion": git(&repo, &["--version"])?.trim(),
        "steps": report,
        "ratio": "median of the per-round ratios GitVcs / git",
        "target": "every ratio at most 1.0",
    });
    std::fs::create_dir_all(&bench_dir).map_err(|e| e.to_string())?;
    let path = bench_dir.join("git.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("bench git: wrote {}", path.display());
    Ok(())
}

/// The median time of the journal's own work in one approve: take the session's lock, write
/// the record as `approving` with the commit id, then as `approved` (atomic, fsynced writes).
fn journal_cost(home: &Path) -> Result<Duration, String> {
    let _ = std::fs::remove_dir_all(home);
    let store = runner_core::SessionStore::on_disk(home.join("sessions"));
    let id = SessionId::new_random();
    let agent = runner_contract::AgentName::parse("fake").map_err(|e| e.to_string())?;
    let options = runner_contract::StartOptions::new(id, home.join("repo"), "bench", agent);
    let worktree = runner_contract::WorktreeSpec {
        repo: home.join("repo"),
        base: "0".repeat(40),
        branch: format!("codehands/bench-{}", id.short()),
        path: home.join("worktrees/0123456789ab").join(id.short()),
    };
    let mut record =
        runner_contract::SessionRecord::queued(&options, "0123456789ab".into(), worktree);
    record.state = runner_contract::SessionState::AwaitingApproval;
    record.last_seq = 12;
    let lock_path = home.join("runs").join(id.to_string()).join("session.lock");
    let mut samples = Vec::new();
    for _ in 0..41 {
        store.remove(&id).map_err(|e| e.to_string())?;
        store.create(&record).map_err(|e| e.to_string())?;
        let started = Instant::now();
        std::fs::create_dir_all(lock_path.parent().unwrap()).map_err(|e| e.to_string())?;
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| e.to_string())?;
        lock.lock().map_err(|e| e.to_string())?;
        store
            .update(&id, |r| {
                r.move_to(runner_contract::SessionState::Approving, "approve")?;
                r.commit = Some("1".repeat(40));
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        store
            .move_to(&id, runner_contract::SessionState::Approved, "approve")
            .map_err(|e| e.to_string())?;
        drop(lock);
        samples.push(started.elapsed());
    }
    let _ = std::fs::remove_dir_all(home);
    Ok(median(samples))
}

/// The timings of one side in one round: create, diff, commit (+ remove), remove.
type Round = [Duration; 4];

/// One round: each step is timed for GitVcs and for git back to back (who goes first
/// alternates), with written data flushed before each timing, so both meet the same load.
async fn paired_round(
    vcs: &GitVcs,
    repo: &Path,
    home: &Path,
    round: usize,
) -> Result<(Round, Round), String> {
    let err = |e: runner_contract::Error| e.to_string();
    let ours_first = round.is_multiple_of(2);
    let base = vcs.base_commit(repo).await.map_err(err)?;
    let key = vcs.repo_key(repo).await.map_err(err)?;
    let spec = |prompt: &str| {
        let id = SessionId::new_random();
        WorktreeSpec {
            repo: repo.to_owned(),
            base: base.clone(),
            branch: vcs.branch_name(prompt, &id),
            path: home.join("worktrees").join(&key).join(id.short()),
        }
    };
    let git_path = |name: &str| home.join("git-worktrees").join(format!("{name}-{round}"));
    let git_branch = |name: &str| format!("bench-git/{name}-{round}-{}", std::process::id());
    let (mut ours, mut theirs) = ([Duration::ZERO; 4], [Duration::ZERO; 4]);

    // create
    let first = spec("bench approve");
    let git_first = git_path("approve");
    let git_first_s = git_first.to_str().ok_or("non-UTF-8 bench path")?.to_owned();
    let branch = git_branch("approve");
    for side in order(ours_first) {
        settle();
        if side {
            let (t, r) = timed_async(vcs.create_worktree(&first)).await;
            r.map_err(err)?;
            ours[0] = t;
        } else {
            let (t, r) = timed(|| {
                git(
                    repo,
                    &["worktree", "add", "-q", "-b", &branch, &git_first_s, "HEAD"],
                )
            });
            r?;
            theirs[0] = t;
        }
    }

    // diff
    change_files(&first.path)?;
    change_files(&git_first)?;
    for side in order(ours_first) {
        settle();
        if side {
            let (t, r) = timed_async(vcs.diff(&first)).await;
            let stat = r.map_err(err)?.stat;
            if stat.files_changed != (CHANGED + ADDED) as u64 {
                return Err(format!(
                    "GitVcs saw {} changed files, expected {}",
                    stat.files_changed,
                    CHANGED + ADDED
                ));
            }
            ours[1] = t;
        } else {
            let (t, r) = timed(|| {
                git(&git_first, &["add", "-A"])?;
                git(&git_first, &["diff", "--cached", "--stat", "HEAD"])
            });
            r?;
            theirs[1] = t;
        }
    }

    // commit (GitVcs removes the worktree as part of approve, so git's side does too)
    for side in order(ours_first) {
        settle();
        if side {
            let (t, r) = timed_async(vcs.commit(&first, "bench commit", None)).await;
            r.map_err(err)?;
            ours[2] = t;
        } else {
            let (t, r) = timed(|| {
                git(&git_first, &["commit", "-q", "-m", "bench commit"])?;
                git(repo, &["worktree", "remove", &git_first_s])
            });
            r?;
            theirs[2] = t;
        }
    }

    // remove a worktree with changes in it (reject)
    let second = spec("bench reject");
    vcs.create_worktree(&second).await.map_err(err)?;
    change_files(&second.path)?;
    let git_second = git_path("reject");
    let git_second_s = git_second
        .to_str()
        .ok_or("non-UTF-8 bench path")?
        .to_owned();
    git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &git_branch("reject"),
            &git_second_s,
            "HEAD",
        ],
    )?;
    change_files(&git_second)?;
    for side in order(ours_first) {
        settle();
        if side {
            let (t, r) = timed_async(vcs.remove_worktree(repo, &second.path)).await;
            r.map_err(err)?;
            ours[3] = t;
        } else {
            let (t, r) = timed(|| git(repo, &["worktree", "remove", "--force", &git_second_s]));
            r?;
            theirs[3] = t;
        }
    }
    Ok((ours, theirs))
}

/// `[true, false]` when GitVcs goes first, else the other way round.
fn order(ours_first: bool) -> [bool; 2] {
    [ours_first, !ours_first]
}

/// Flushes written data to disk so one side's writeback does not land in the other's timing.
fn settle() {
    let _ = Command::new("sync").status();
}

/// Changes 100 files spread over the tree and adds 10 new ones, the same way each time.
fn change_files(worktree: &Path) -> Result<(), String> {
    for i in 0..CHANGED {
        let n = i * (FILES / CHANGED);
        let path = worktree.join(file_path(n));
        let mut text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        text = text.replacen("line 1 ", "line one ", 1);
        text.push_str("a line the agent added\n");
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let dir = worktree.join("bench-new");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for i in 0..ADDED {
        std::fs::write(dir.join(format!("added-{i}.txt")), file_text(FILES + i))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn file_path(n: usize) -> PathBuf {
    PathBuf::from(format!("dir-{:03}/file-{n:05}.txt", n % DIRS))
}

/// About 5 KB of varied text: numbered lines of pseudo-random words.
fn file_text(n: usize) -> String {
    const WORDS: [&str; 16] = [
        "alpha", "branch", "commit", "delta", "echo", "fox", "git", "hash", "index", "jolt",
        "kilo", "lima", "merge", "node", "omega", "patch",
    ];
    let mut state = (n as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::with_capacity(LINES_PER_FILE * 52);
    for line in 1..=LINES_PER_FILE {
        out.push_str(&format!("line {line} "));
        for _ in 0..6 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.push_str(WORDS[(state >> 60) as usize]);
            out.push(' ');
        }
        out.push_str(&format!("{:08x}\n", state >> 32));
    }
    out
}

/// The generated repo, made once and kept (a marker file names its shape).
fn ensure_repo(repo: &Path) -> Result<PathBuf, String> {
    let marker = repo.join(".git/codehands-bench");
    if std::fs::read_to_string(&marker).is_ok_and(|v| v == REPO_VERSION) {
        git(repo, &["worktree", "prune"])?;
        return Ok(repo.to_owned());
    }
    println!("bench git: generating {FILES} files in {}", repo.display());
    let _ = std::fs::remove_dir_all(repo);
    std::fs::create_dir_all(repo).map_err(|e| format!("cannot create {}: {e}", repo.display()))?;
    for n in 0..FILES {
        let path = repo.join(file_path(n));
        if n < DIRS {
            std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| e.to_string())?;
        }
        std::fs::write(&path, file_text(n)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    git(repo, &["init", "-q", "-b", "main"])?;
    git(repo, &["config", "user.name", "Bench"])?;
    git(repo, &["config", "user.email", "bench@example.com"])?;
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-q", "-m", "generated"])?;
    std::fs::write(&marker, REPO_VERSION).map_err(|e| e.to_string())?;
    Ok(repo.to_owned())
}

fn delete_bench_branches(repo: &Path) -> Result<(), String> {
    let listed = git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/codehands",
            "refs/heads/bench-git",
        ],
    )?;
    let branches: Vec<&str> = listed.lines().filter(|l| !l.is_empty()).collect();
    if !branches.is_empty() {
        let mut args = vec!["branch", "-q", "-D"];
        args.extend(branches);
        git(repo, &args)?;
    }
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn timed<T>(work: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let out = work();
    (start.elapsed(), out)
}

async fn timed_async<T>(work: impl std::future::Future<Output = T>) -> (Duration, T) {
    let start = Instant::now();
    let out = work.await;
    (start.elapsed(), out)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
