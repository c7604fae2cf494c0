//! Real repositories in temp folders for the `Vcs` suite, set up and checked with the `git`
//! program (never through the `Vcs` under test).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use runner_contract::{SessionId, Vcs, WorktreeSpec};

/// Whether the `git` program can be run.
pub fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    // The tester's own git config must not change what the suite sees.
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Fixture Author")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.com")
        .env("GIT_COMMITTER_NAME", "Fixture Author")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    cmd
}

/// Runs git in `dir` and returns its stdout; panics with git's stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs git in `dir` and returns everything it did, success or not.
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("git runs")
}

/// Runs git in `dir` with `input` on stdin; returns the output.
pub fn git_with_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command(dir, args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().expect("git finishes")
}

/// Writes `bytes` at `dir/rel`, making parent folders.
pub fn write(dir: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A temp folder holding a repo with two commits on `main`, and a `CODEHANDS_HOME`.
pub struct Fixture {
    /// Keeps the folder alive.
    pub dir: tempfile::TempDir,
    /// The person's repository.
    pub repo: PathBuf,
    /// `$CODEHANDS_HOME` for this test.
    pub home: PathBuf,
}

impl Fixture {
    /// The usual fixture.
    pub fn new() -> Self {
        Self::named("repo", "home")
    }

    /// A fixture whose repo and home folders have the given names (spaces, non-ASCII…).
    pub fn named(repo: &str, home: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join(repo);
        let home = dir.path().join(home);
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["config", "user.name", "Repo Owner"]);
        git(&repo, &["config", "user.email", "owner@example.com"]);
        git(&repo, &["config", "core.autocrlf", "false"]);
        write(
            &repo,
            "README.md",
            "# fixture\n\nA repo for the Vcs suite.\n",
        );
        write(&repo, "src/lib.rs", numbered_lines("line", 40));
        write(
            &repo,
            "src/date.rs",
            "pub fn year() -> u32 {\n    2025\n}\n",
        );
        write(&repo, "docs/guide.md", numbered_lines("guide", 30));
        write(&repo, "scripts/run.sh", "#!/bin/sh\necho run\n");
        write(&repo, "assets/logo.bin", binary_bytes(1, 3000));
        write(&repo, "old/name.txt", numbered_lines("moved", 25));
        write(&repo, "gone.txt", "to be deleted\n");
        write(&repo, ".gitignore", "target/\n*.log\n");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        write(&repo, "CHANGELOG.md", "- first\n");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "second"]);
        Self { dir, repo, home }
    }

    /// A spec for a new session on this repo, made with the `Vcs` the way the runner makes it.
    pub async fn spec(&self, vcs: &dyn Vcs, prompt: &str) -> (WorktreeSpec, SessionId) {
        let id = SessionId::new_random();
        let base = vcs.base_commit(&self.repo).await.expect("base commit");
        let key = vcs.repo_key(&self.repo).await.expect("repo key");
        let spec = WorktreeSpec {
            repo: self.repo.clone(),
            base,
            branch: vcs.branch_name(prompt, &id),
            path: self.home.join("worktrees").join(key).join(id.short()),
        };
        (spec, id)
    }

    /// The folder this tool's worktrees live under.
    pub fn root(&self) -> PathBuf {
        self.home.join("worktrees")
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

/// `n` numbered lines starting with `word`.
pub fn numbered_lines(word: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{word} {i}\n")).collect()
}

/// `len` bytes that are binary to git (NULs among them), varied by `seed`.
pub fn binary_bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + seed as usize * 7) % 256) as u8)
        .collect()
}

/// Everything about a checkout the person would notice: HEAD, its branch and where the
/// branch points, the index file byte for byte, and every working file with its mode.
#[derive(Debug, PartialEq, Eq)]
pub struct CheckoutSnapshot {
    head: String,
    branch: String,
    index: Vec<u8>,
    files: BTreeMap<PathBuf, (u32, Vec<u8>)>,
}

impl CheckoutSnapshot {
    /// Takes the snapshot without running anything that could touch the index (no `git status`).
    pub fn of(repo: &Path) -> Self {
        let head = git(repo, &["rev-parse", "HEAD"]).trim().to_owned();
        let branch = git(repo, &["symbolic-ref", "-q", "HEAD"]).trim().to_owned();
        let index = std::fs::read(repo.join(".git/index")).unwrap_or_default();
        let mut files = BTreeMap::new();
        collect_files(repo, repo, &mut files);
        Self {
            head,
            branch,
            index,
            files,
        }
    }
}

fn collect_files(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, (u32, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path == root.join(".git") {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            collect_files(root, &path, out);
        } else {
            let bytes = if meta.file_type().is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.insert(
                path.strip_prefix(root).unwrap().to_owned(),
                (mode_of(&meta), bytes),
            );
        }
    }
}

#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode()
}

#[cfg(not(unix))]
fn mode_of(_meta: &std::fs::Metadata) -> u32 {
    0
}

/// Every file of a commit's tree: path → (mode as git prints it, bytes).
pub fn tree_files(repo: &Path, rev: &str) -> BTreeMap<String, (String, Vec<u8>)> {
    let listing = git(repo, &["ls-tree", "-r", "-z", rev]);
    let mut out = BTreeMap::new();
    for record in listing.split('\0').filter(|r| !r.is_empty()) {
        let (meta, path) = record.split_once('\t').unwrap();
        let parts: Vec<&str> = meta.split(' ').collect();
        let bytes = git_output(repo, &["cat-file", "blob", parts[2]]).stdout;
        out.insert(path.to_owned(), (parts[0].to_owned(), bytes));
    }
    out
}

/// Per-file `(insertions, deletions)` as git counts them (`None` for binary), keyed by new
/// path, for the staged changes of `dir` against `base`. Rename sources are keyed as `old => new`.
pub fn git_numstat(dir: &Path, base: &str) -> BTreeMap<String, Option<(u64, u64)>> {
    let text = git(dir, &["diff", "--cached", "--numstat", "-M", "-z", base]);
    let mut fields = text.split('\0').peekable();
    let mut out = BTreeMap::new();
    while let Some(head) = fields.next() {
        if head.is_empty() {
            continue;
        }
        let mut parts = head.splitn(3, '\t');
        let ins = parts.next().unwrap();
        let del = parts.next().unwrap();
        let path = parts.next().unwrap_or("");
        let key = if path.is_empty() {
            let old = fields.next().unwrap();
            let new = fields.next().unwrap();
            format!("{old} => {new}")
        } else {
            path.to_owned()
        };
        let counts = if ins == "-" {
            None
        } else {
            Some((ins.parse().unwrap(), del.parse().unwrap()))
        };
        out.insert(key, counts);
    }
    out
}

/// The paths of the repo's registered worktrees, as `git worktree list` gives them.
pub fn git_worktrees(repo: &Path) -> Vec<PathBuf> {
    git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .collect()
}

/// Whether `refs/heads/<branch>` exists, according to git.
pub fn git_branch_exists(repo: &Path, branch: &str) -> bool {
    git_output(
        repo,
        &[
            "show-ref",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ],
    )
    .status
    .success()
}

/// Where `refs/heads/<branch>` points, according to git.
pub fn git_rev(repo: &Path, rev: &str) -> String {
    git(repo, &["rev-parse", "--verify", "-q", rev])
        .trim()
        .to_owned()
}
