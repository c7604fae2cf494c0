//! The `Vcs` conformance suite: free async functions over `&dyn Vcs`, each on real
//! repositories in temp folders, set up and checked with the `git` program.
//!
//! Every function skips (and fails under `CI=true`) when `git` is not installed.

pub mod fixture;

use std::path::Path;

use fixture::{
    CheckoutSnapshot, Fixture, binary_bytes, git, git_branch_exists, git_numstat, git_output,
    git_rev, git_with_stdin, git_worktrees, numbered_lines, tree_files, write,
};

use super::{expect_error, skip};
use crate::{ErrorKind, FileStat, SessionId, Signature, Vcs, WorktreeSpec};

/// The words every refusal of a bad repo carries (seed 000).
pub const NOT_A_REPO: &str = "is not a git repo or has no commits yet";
/// The words of the refusal to approve nothing (seed 000).
pub const NOTHING_TO_APPROVE: &str = "nothing to approve: the agent made no changes";

fn git_missing() -> bool {
    if fixture::git_available() {
        return false;
    }
    skip("the git program is not installed");
    true
}

/// A missing path, a plain folder, a bare repo and a repo without commits are all refused with
/// "is not a git repo or has no commits yet", and nothing is created.
pub async fn refuses_what_is_not_a_repo_with_commits(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let plain = dir.path().join("plain");
    let bare = dir.path().join("bare.git");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    git(
        dir.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    git(&empty, &["init", "-q"]);
    for (what, path) in [
        ("a missing path", &missing),
        ("a plain folder", &plain),
        ("a bare repo", &bare),
        ("a repo with no commits", &empty),
    ] {
        let message = expect_error(vcs.base_commit(path).await, ErrorKind::InvalidInput, what);
        assert!(message.contains(NOT_A_REPO), "{what}: {message}");
    }
    assert!(!missing.exists(), "nothing was created at the missing path");
    let f = Fixture::new();
    let inside = f.repo.join("src");
    let message = expect_error(
        vcs.base_commit(&inside).await,
        ErrorKind::InvalidInput,
        "a folder inside a checkout",
    );
    assert!(message.contains(NOT_A_REPO), "{message}");
}

/// The base commit is HEAD; the repo key is 12 hex of the SHA-1 of the origin URL (shared by
/// two clones) or of the canonical absolute path.
pub async fn base_commit_and_repo_key(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let head = git_rev(&f.repo, "HEAD");
    assert_eq!(vcs.base_commit(&f.repo).await.unwrap(), head);

    let canonical = std::fs::canonicalize(&f.repo).unwrap();
    let expected = sha1_12(canonical.as_os_str().as_encoded_bytes());
    let key = vcs.repo_key(&f.repo).await.unwrap();
    assert_eq!(key, expected, "no origin: SHA-1 of the absolute path");
    assert!(key.len() == 12 && key.bytes().all(|b| b.is_ascii_hexdigit()));

    let url = "https://example.com/team/project.git";
    let one = f.dir.path().join("clone one");
    let two = f.dir.path().join("clone-two");
    for clone in [&one, &two] {
        git(
            f.dir.path(),
            &[
                "clone",
                "-q",
                f.repo.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
        git(clone, &["remote", "set-url", "origin", url]);
    }
    let key_one = vcs.repo_key(&one).await.unwrap();
    assert_eq!(key_one, sha1_12(url.as_bytes()), "origin: SHA-1 of its URL");
    assert_eq!(
        key_one,
        vcs.repo_key(&two).await.unwrap(),
        "two clones share a key"
    );
    assert_ne!(key_one, key);
}

fn sha1_12(bytes: &[u8]) -> String {
    assert_eq!(
        plain_sha1(b"abc"),
        "a9993e364706816aba3e25717850c26c9cd0d89d",
        "the suite's own SHA-1"
    );
    plain_sha1(bytes)[..12].to_owned()
}

/// A small SHA-1 so the suite does not depend on the adapter's hashing.
fn plain_sha1(data: &[u8]) -> String {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64) * 8;
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 80];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                chunk[4 * i],
                chunk[4 * i + 1],
                chunk[4 * i + 2],
                chunk[4 * i + 3],
            ]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (slot, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *slot = slot.wrapping_add(v);
        }
    }
    h.iter().map(|v| format!("{v:08x}")).collect()
}

/// Branch names are `codehands/<slug>-<id8>`, bounded, and valid refs for any prompt: any
/// script, emoji, a leading `-`, dots, slashes, control characters, 10 kB.
pub async fn branch_names_are_valid_refs(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let id = SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap();
    let long = "x".repeat(10_000);
    let long_words = "fix the bug ".repeat(900);
    let prompts = [
        "Fix the date bug",
        "",
        "   ",
        "-leading dash",
        "-",
        "..",
        "a..b",
        ".hidden",
        "trailing.",
        "trailing/",
        "/slashes/and\\back\\",
        "name.lock",
        "@",
        "@{u}",
        "ref@{0}",
        "HEAD",
        "~^:?*[",
        "tab\tand\nnewline",
        "control \u{1}\u{7f}",
        "日本語のバグを直して",
        "🚀🔥 emoji only",
        "Ünïcödé wörds",
        "Fix 修正 the bug",
        "مرحبا بالعالم",
        long.as_str(),
        long_words.as_str(),
    ];
    let scratch = tempfile::tempdir().unwrap();
    for prompt in prompts {
        let name = vcs.branch_name(prompt, &id);
        let shown: String = prompt.chars().take(40).collect();
        assert!(name.starts_with("codehands/"), "{shown:?} gave {name}");
        assert!(name.ends_with("-3f2a9c1e"), "{shown:?} gave {name}");
        assert!(name.len() <= 100, "{shown:?} gave {} bytes", name.len());
        let full = format!("refs/heads/{name}");
        let checked = git_output(scratch.path(), &["check-ref-format", &full]);
        assert!(
            checked.status.success(),
            "{shown:?} gave {name}, which git refuses"
        );
        let branch = git_output(scratch.path(), &["check-ref-format", "--branch", &name]);
        assert!(
            branch.status.success(),
            "{shown:?} gave {name}, which git refuses as a branch"
        );
        assert_eq!(
            name,
            vcs.branch_name(prompt, &id),
            "the same prompt gives the same name"
        );
    }
    assert!(
        vcs.branch_name("Fix the date bug", &id).contains("date"),
        "the slug comes from the prompt"
    );

    // The hostile names also work as real branches with real worktrees.
    let f = Fixture::new();
    for prompt in ["-leading dash", "🚀🔥 emoji only", long.as_str()] {
        let (spec, _) = f.spec(vcs, prompt).await;
        vcs.create_worktree(&spec)
            .await
            .expect("worktree on a hostile name");
        assert!(git_branch_exists(&f.repo, &spec.branch));
        vcs.remove_worktree(&f.repo, &spec.path).await.unwrap();
        vcs.delete_branch(&f.repo, &spec.branch).await.unwrap();
    }
}

/// The worktree is on a new branch from base, outside the repo, and the person's checkout
/// (HEAD, branch, index, working files, even uncommitted edits) is the same after create,
/// diff, commit and reject.
pub async fn worktree_leaves_the_checkout_untouched(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    // A checkout with work in progress: "unchanged" must not mean "cleaned".
    write(
        &f.repo,
        "README.md",
        "# edited by the person, not committed\n",
    );
    write(&f.repo, "notes.txt", "the person's untracked notes\n");
    write(&f.repo, "CHANGELOG.md", "- staged by the person\n");
    git(&f.repo, &["add", "CHANGELOG.md"]);
    let before = CheckoutSnapshot::of(&f.repo);

    let (spec, _) = f.spec(vcs, "Fix the date bug").await;
    vcs.create_worktree(&spec).await.expect("create");
    assert_eq!(
        CheckoutSnapshot::of(&f.repo),
        before,
        "after create_worktree"
    );
    let wt = &spec.path;
    assert!(wt.join("src/date.rs").is_file(), "files are checked out");
    assert!(!wt.starts_with(&f.repo), "the worktree is outside the repo");
    assert_eq!(
        git(wt, &["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/{}", spec.branch),
        "the worktree is on the new branch"
    );
    assert_eq!(git_rev(wt, "HEAD"), spec.base, "the branch starts at base");
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        spec.base
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# fixture\n\nA repo for the Vcs suite.\n",
        "the worktree holds the base commit, not the person's edits"
    );
    assert!(
        !wt.join("notes.txt").exists(),
        "untracked files of the person stay home"
    );
    assert_eq!(
        git(wt, &["status", "--porcelain"]),
        "",
        "a fresh worktree is clean"
    );

    write(wt, "src/date.rs", "pub fn year() -> u32 {\n    2026\n}\n");
    let diff = vcs.diff(wt, &spec.base).await.expect("diff");
    assert_eq!(diff.stat.files_changed, 1);
    assert_eq!(CheckoutSnapshot::of(&f.repo), before, "after diff");
    vcs.commit(&f.repo, wt, &spec.base, "Fix the date bug", None)
        .await
        .expect("commit");
    assert_eq!(CheckoutSnapshot::of(&f.repo), before, "after commit");

    let (other, _) = f.spec(vcs, "Another try").await;
    vcs.create_worktree(&other).await.unwrap();
    write(&other.path, "README.md", "changed and thrown away\n");
    vcs.remove_worktree(&f.repo, &other.path).await.unwrap();
    vcs.delete_branch(&f.repo, &other.branch).await.unwrap();
    assert_eq!(CheckoutSnapshot::of(&f.repo), before, "after reject");
}

/// Makes every kind of change in a fresh worktree: edits, a missing final newline, a deletion,
/// two renames, binary edits and additions, untracked files in a new folder, an empty file,
/// ignored files, and on unix a mode change and a symlink.
fn change_everything(wt: &Path) {
    let mut lib = numbered_lines("line", 40).replace("line 10\n", "line ten\n");
    lib.push_str("added 1\nadded 2\n");
    write(wt, "src/lib.rs", lib);
    write(wt, "src/date.rs", "pub fn year() -> u32 {\n    2026\n}");
    std::fs::remove_file(wt.join("gone.txt")).unwrap();
    std::fs::create_dir_all(wt.join("new")).unwrap();
    std::fs::rename(wt.join("old/name.txt"), wt.join("new/place.txt")).unwrap();
    let guide = std::fs::read_to_string(wt.join("docs/guide.md")).unwrap();
    std::fs::remove_file(wt.join("docs/guide.md")).unwrap();
    write(
        wt,
        "docs/handbook.md",
        guide.replace("guide 15\n", "guide fifteen\n"),
    );
    write(wt, "assets/logo.bin", binary_bytes(2, 3000));
    write(wt, "assets/new.bin", binary_bytes(3, 500));
    write(wt, "notes/todo.md", "- write tests\n- ship\n");
    write(wt, "empty.txt", "");
    write(wt, "target/build.o", binary_bytes(4, 100));
    write(wt, "debug.log", "ignored\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let script = wt.join("scripts/run.sh");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("README.md", wt.join("readme-link")).unwrap();
    }
}

/// Applies `patch` to a fresh clone at base and checks it yields exactly the tree `git add -A`
/// makes in the worktree; also `git apply --check` in the person's repo.
fn assert_patch_rebuilds_worktree(f: &Fixture, wt: &Path, base: &str, patch: &str) {
    let check = git_with_stdin(&f.repo, &["apply", "--check", "-"], patch.as_bytes());
    assert!(
        check.status.success(),
        "git apply --check refused the patch: {}\n{patch}",
        String::from_utf8_lossy(&check.stderr)
    );
    let scratch = f.dir.path().join(format!("apply-{}", &base[..8]));
    let _ = std::fs::remove_dir_all(&scratch);
    git(
        f.dir.path(),
        &[
            "clone",
            "-q",
            f.repo.to_str().unwrap(),
            scratch.to_str().unwrap(),
        ],
    );
    git(&scratch, &["checkout", "-q", "--detach", base]);
    let applied = git_with_stdin(&scratch, &["apply", "--index", "-"], patch.as_bytes());
    assert!(
        applied.status.success(),
        "git apply --index refused the patch: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    git(wt, &["add", "-A"]);
    assert_eq!(
        git(&scratch, &["write-tree"]),
        git(wt, &["write-tree"]),
        "the patch applied on base gives the worktree's tree"
    );
}

fn stat_as_numstat(files: &[FileStat]) -> std::collections::BTreeMap<String, Option<(u64, u64)>> {
    files
        .iter()
        .map(|f| {
            let key = match &f.old_path {
                Some(old) => format!("{old} => {}", f.path),
                None => f.path.clone(),
            };
            let counts = (!f.binary).then_some((f.insertions, f.deletions));
            (key, counts)
        })
        .collect()
}

/// The diff covers untracked (not ignored) files, deletions, renames, binary files and mode
/// changes; its stat matches `git diff --cached --numstat -M` and its patch rebuilds the
/// worktree on base.
pub async fn diff_covers_every_kind_of_change(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let (spec, _) = f.spec(vcs, "Change everything").await;
    vcs.create_worktree(&spec).await.unwrap();
    let wt = &spec.path;
    let empty = vcs.diff(wt, &spec.base).await.unwrap();
    assert!(
        empty.stat.is_empty() && empty.patch.is_empty(),
        "no change, no diff: {empty:?}"
    );

    change_everything(wt);
    let diff = vcs.diff(wt, &spec.base).await.expect("diff");
    let paths: Vec<&str> = diff.stat.files.iter().map(|f| f.path.as_str()).collect();
    for expected in [
        "src/lib.rs",
        "src/date.rs",
        "gone.txt",
        "new/place.txt",
        "docs/handbook.md",
        "assets/logo.bin",
        "assets/new.bin",
        "notes/todo.md",
        "empty.txt",
    ] {
        assert!(
            paths.contains(&expected),
            "{expected} is in the stat: {paths:?}"
        );
    }
    for ignored in ["target/build.o", "debug.log"] {
        assert!(
            !paths.contains(&ignored),
            "ignored {ignored} is not in the stat"
        );
        assert!(
            !diff.patch.contains(ignored),
            "ignored {ignored} is not in the patch"
        );
    }
    let by_path = |p: &str| diff.stat.files.iter().find(|f| f.path == p).unwrap();
    assert_eq!(
        by_path("new/place.txt").old_path.as_deref(),
        Some("old/name.txt"),
        "a rename"
    );
    assert_eq!(
        by_path("docs/handbook.md").old_path.as_deref(),
        Some("docs/guide.md")
    );
    assert!(by_path("assets/logo.bin").binary && by_path("assets/new.bin").binary);
    let lib = by_path("src/lib.rs");
    assert_eq!((lib.insertions, lib.deletions), (3, 1), "src/lib.rs counts");
    assert!(
        diff.patch.contains("GIT binary patch"),
        "binary files go as git binary patches"
    );
    assert!(diff.patch.contains("\\ No newline at end of file"));
    assert_eq!(diff.stat.files_changed, diff.stat.files.len() as u64);
    assert_eq!(
        diff.stat.insertions,
        diff.stat.files.iter().map(|f| f.insertions).sum::<u64>()
    );
    #[cfg(unix)]
    {
        assert!(paths.contains(&"scripts/run.sh") && paths.contains(&"readme-link"));
        assert!(
            diff.patch.contains("old mode 100644\nnew mode 100755"),
            "the mode change"
        );
        assert!(diff.patch.contains("new file mode 120000"), "the symlink");
    }
    let again = vcs.diff(wt, &spec.base).await.unwrap();
    assert_eq!(again, diff, "diff is stable and changes nothing");

    assert_patch_rebuilds_worktree(&f, wt, &spec.base, &diff.patch);
    assert_eq!(
        stat_as_numstat(&diff.stat.files),
        git_numstat(wt, &spec.base),
        "the stat matches git's numstat"
    );
}

/// The worktree's files, except `.git` and the given ignored paths: path → bytes.
fn work_files(wt: &Path, ignored: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                walk(root, &path, out);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, target.into_os_string().into_encoded_bytes());
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(wt, wt, &mut out);
    out.retain(|path, _| {
        !ignored
            .iter()
            .any(|i| path == i || path.starts_with(&format!("{i}/")))
    });
    out
}

/// Approve makes exactly one commit on the branch with base as its parent, holding every
/// file not ignored (also what the agent staged or committed itself), by the given author and
/// the repo's committer; the worktree goes, the branch stays, the person's branch does not move.
pub async fn commit_makes_one_commit_on_the_branch(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);
    let (spec, _) = f.spec(vcs, "Fix the date bug").await;
    vcs.create_worktree(&spec).await.unwrap();
    let wt = &spec.path;
    change_everything(wt);
    // The agent also committed one change and staged another.
    write(wt, "CHANGELOG.md", "- first\n- agent wip\n");
    git(wt, &["commit", "-q", "-am", "agent wip"]);
    write(wt, "staged.txt", "staged by the agent\n");
    git(wt, &["add", "staged.txt"]);
    let expected = work_files(wt, &["target", "debug.log"]);

    let reviewer = Signature {
        name: "Ada Reviewer".into(),
        email: "ada@example.com".into(),
    };
    let id = vcs
        .commit(
            &f.repo,
            wt,
            &spec.base,
            "Fix the date bug\n\nWith a body.",
            Some(&reviewer),
        )
        .await
        .expect("commit");
    let branch_ref = format!("refs/heads/{}", spec.branch);
    assert_eq!(
        git_rev(&f.repo, &branch_ref),
        id,
        "the branch points at the new commit"
    );
    assert_eq!(
        git(
            &f.repo,
            &[
                "rev-list",
                "--count",
                &format!("{}..{branch_ref}", spec.base)
            ]
        )
        .trim(),
        "1",
        "exactly one commit on top of base"
    );
    let info = git(
        &f.repo,
        &["log", "-1", "--format=%P|%an <%ae>|%cn <%ce>|%s|%b", &id],
    );
    assert_eq!(
        info.trim_end(),
        format!(
            "{}|Ada Reviewer <ada@example.com>|Repo Owner <owner@example.com>|Fix the date bug|With a body.",
            spec.base
        )
    );
    let committed: std::collections::BTreeMap<String, Vec<u8>> = tree_files(&f.repo, &id)
        .into_iter()
        .map(|(p, (_, bytes))| (p, bytes))
        .collect();
    assert_eq!(
        committed.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "the commit holds every file not ignored, and nothing else"
    );
    assert_eq!(committed, expected, "with the worktree's contents");
    #[cfg(unix)]
    assert_eq!(
        tree_files(&f.repo, &id)["scripts/run.sh"].0,
        "100755",
        "with its modes"
    );

    assert!(!wt.exists(), "the worktree is removed");
    assert!(
        !git_worktrees(&f.repo)
            .iter()
            .any(|p| p.ends_with(spec.path.file_name().unwrap()))
    );
    assert!(git_branch_exists(&f.repo, &spec.branch), "the branch stays");
    assert_eq!(
        CheckoutSnapshot::of(&f.repo),
        before,
        "the person's checkout did not move"
    );

    // Without an author, the repo's configured identity signs it.
    let (second, _) = f.spec(vcs, "Second").await;
    vcs.create_worktree(&second).await.unwrap();
    write(&second.path, "second.txt", "two\n");
    let id = vcs
        .commit(&f.repo, &second.path, &second.base, "Second", None)
        .await
        .unwrap();
    assert_eq!(
        git(&f.repo, &["log", "-1", "--format=%an <%ae>", &id]).trim(),
        "Repo Owner <owner@example.com>"
    );
}

/// Approving an untouched worktree (or one with only ignored files) is refused with
/// "nothing to approve: the agent made no changes", and the worktree and branch stay.
pub async fn nothing_to_approve(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let (spec, _) = f.spec(vcs, "Do nothing").await;
    vcs.create_worktree(&spec).await.unwrap();
    for round in ["untouched", "only ignored files"] {
        let message = expect_error(
            vcs.commit(&f.repo, &spec.path, &spec.base, "Nothing", None)
                .await,
            ErrorKind::NothingToApprove,
            round,
        );
        assert!(message.contains(NOTHING_TO_APPROVE), "{round}: {message}");
        assert!(
            spec.path.join("README.md").exists(),
            "{round}: the worktree stays"
        );
        assert_eq!(
            git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
            spec.base
        );
        write(&spec.path, "debug.log", "ignored\n");
        write(&spec.path, "target/out.o", "ignored\n");
    }
}

/// Reject removes the worktree even with changes in it, then deletes the branch; both are
/// quiet when already gone; a branch checked out in a worktree is not deleted.
pub async fn reject_removes_worktree_and_branch(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);
    let (spec, _) = f.spec(vcs, "Throw away").await;
    vcs.create_worktree(&spec).await.unwrap();
    change_everything(&spec.path);

    expect_error(
        vcs.delete_branch(&f.repo, &spec.branch).await,
        ErrorKind::Vcs,
        "deleting a branch that a worktree has checked out",
    );
    assert!(git_branch_exists(&f.repo, &spec.branch));

    vcs.remove_worktree(&f.repo, &spec.path)
        .await
        .expect("remove with changes");
    assert!(!spec.path.exists(), "the folder is gone");
    assert!(
        !git_worktrees(&f.repo)
            .iter()
            .any(|p| p.ends_with(spec.path.file_name().unwrap()))
    );
    assert!(
        git_branch_exists(&f.repo, &spec.branch),
        "remove keeps the branch"
    );
    vcs.delete_branch(&f.repo, &spec.branch)
        .await
        .expect("delete");
    assert!(!git_branch_exists(&f.repo, &spec.branch));
    assert!(!vcs.branch_exists(&f.repo, &spec.branch).await.unwrap());

    vcs.remove_worktree(&f.repo, &spec.path)
        .await
        .expect("removing again is fine");
    vcs.delete_branch(&f.repo, &spec.branch)
        .await
        .expect("deleting again is fine");
    assert_eq!(CheckoutSnapshot::of(&f.repo), before);
}

/// Recovery: this tool's worktrees (and only those under the root) are listed with their
/// branches, stale entries are pruned, and a branch tells whether the agent committed.
pub async fn recovery_helpers(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let (one, _) = f.spec(vcs, "First session").await;
    let (two, _) = f.spec(vcs, "Second session").await;
    vcs.create_worktree(&one).await.unwrap();
    vcs.create_worktree(&two).await.unwrap();
    let elsewhere = f.dir.path().join("elsewhere");
    git(
        &f.repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "mine",
            elsewhere.to_str().unwrap(),
        ],
    );

    let listed = vcs.list_worktrees(&f.repo, &f.root()).await.unwrap();
    let mut expected: Vec<(std::path::PathBuf, Option<String>)> = [&one, &two]
        .iter()
        .map(|s| {
            (
                std::fs::canonicalize(&s.path).unwrap(),
                Some(s.branch.clone()),
            )
        })
        .collect();
    expected.sort();
    let mut got: Vec<_> = listed
        .iter()
        .map(|w| (std::fs::canonicalize(&w.path).unwrap(), w.branch.clone()))
        .collect();
    got.sort();
    assert_eq!(
        got, expected,
        "ours, with branches; not the person's own worktree"
    );

    assert!(
        !vcs.has_commits_beyond(&f.repo, &one.branch, &one.base)
            .await
            .unwrap()
    );
    write(&one.path, "agent.txt", "committed by the agent\n");
    git(&one.path, &["add", "agent.txt"]);
    git(&one.path, &["commit", "-q", "-m", "agent commit"]);
    assert!(
        vcs.has_commits_beyond(&f.repo, &one.branch, &one.base)
            .await
            .unwrap()
    );
    assert!(vcs.branch_exists(&f.repo, &one.branch).await.unwrap());
    assert!(
        !vcs.branch_exists(&f.repo, "codehands/never-made-00000000")
            .await
            .unwrap()
    );

    // A crash or a person deleted the second folder by hand.
    std::fs::remove_dir_all(&two.path).unwrap();
    vcs.prune(&f.repo).await.expect("prune");
    let listed = vcs.list_worktrees(&f.repo, &f.root()).await.unwrap();
    assert_eq!(listed.len(), 1, "the stale entry is pruned: {listed:?}");
    assert_eq!(listed[0].branch.as_deref(), Some(one.branch.as_str()));
    let registered = git_worktrees(&f.repo);
    assert!(
        registered.iter().any(|p| p.ends_with("elsewhere")),
        "other worktrees stay"
    );
    assert!(
        !registered
            .iter()
            .any(|p| p.ends_with(two.path.file_name().unwrap())),
        "git agrees"
    );
    assert!(
        git_branch_exists(&f.repo, &two.branch),
        "pruning keeps branches"
    );
    vcs.delete_branch(&f.repo, &two.branch)
        .await
        .expect("its branch can go now");
}

/// Leftovers of a crash are refused with a clear error and nothing new is left behind: a branch
/// already there, a non-empty folder already there, the same worktree twice. A registration
/// whose folder is gone does not block a new worktree at that path.
pub async fn leftovers_are_refused_cleanly(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);

    let (spec, _) = f.spec(vcs, "Branch left over").await;
    git(&f.repo, &["branch", &spec.branch, "HEAD~1"]);
    let old_tip = git_rev(&f.repo, &format!("refs/heads/{}", spec.branch));
    let message = expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "branch there",
    );
    assert!(
        message.contains(&spec.branch),
        "names the branch: {message}"
    );
    assert!(!spec.path.exists(), "no folder was made");
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        old_tip,
        "branch untouched"
    );

    let (spec, _) = f.spec(vcs, "Folder left over").await;
    write(&spec.path, "leftover.txt", "from a crash\n");
    let message = expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "folder there",
    );
    assert!(
        message.contains(&spec.path.display().to_string()),
        "names the folder: {message}"
    );
    assert!(
        !git_branch_exists(&f.repo, &spec.branch),
        "no branch was made"
    );
    assert_eq!(
        std::fs::read_to_string(spec.path.join("leftover.txt")).unwrap(),
        "from a crash\n"
    );

    let (spec, id) = f.spec(vcs, "Twice").await;
    vcs.create_worktree(&spec).await.unwrap();
    write(&spec.path, "work.txt", "in progress\n");
    expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "the same worktree twice",
    );
    assert_eq!(
        std::fs::read_to_string(spec.path.join("work.txt")).unwrap(),
        "in progress\n"
    );
    assert!(git_branch_exists(&f.repo, &spec.branch));

    // The folder vanished but the registration stayed: a retry at that path works.
    std::fs::remove_dir_all(&spec.path).unwrap();
    let retry = WorktreeSpec {
        branch: vcs.branch_name("Twice retried", &id),
        ..spec.clone()
    };
    vcs.create_worktree(&retry)
        .await
        .expect("a stale registration does not block");
    assert!(retry.path.join("README.md").exists());
    assert_eq!(CheckoutSnapshot::of(&f.repo), before);
}

/// A worktree folder that cannot be written gives a clear error and leaves no branch, no
/// registration and no folder behind.
pub async fn unwritable_folder_leaves_nothing(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let before = CheckoutSnapshot::of(&f.repo);
    let (spec, _) = f.spec(vcs, "Blocked").await;
    // A file where a folder of the path should be: no user, root included, can write there.
    let blocker = f.dir.path().join("blocker");
    std::fs::write(&blocker, "a file, not a folder").unwrap();
    let blocked = WorktreeSpec {
        path: blocker.join("worktrees").join("key").join("id"),
        ..spec.clone()
    };
    let message = expect_error(
        vcs.create_worktree(&blocked).await,
        ErrorKind::Vcs,
        "a file in the way",
    );
    assert!(message.contains("blocker"), "names the path: {message}");
    assert!(
        !git_branch_exists(&f.repo, &spec.branch),
        "no branch is left"
    );
    assert_eq!(git_worktrees(&f.repo).len(), 1, "no registration is left");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = f.dir.path().join("read-only");
        std::fs::create_dir_all(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        let writable_anyway = std::fs::write(locked.join("probe"), "x").is_ok();
        if writable_anyway {
            // Root ignores permission bits; the file-in-the-way case above covers it.
            let _ = std::fs::remove_file(locked.join("probe"));
        } else {
            let denied = WorktreeSpec {
                path: locked.join("worktrees").join("id"),
                ..spec.clone()
            };
            expect_error(
                vcs.create_worktree(&denied).await,
                ErrorKind::Vcs,
                "a read-only folder",
            );
            assert!(!git_branch_exists(&f.repo, &spec.branch));
            assert_eq!(
                std::fs::read_dir(&locked).unwrap().count(),
                0,
                "nothing made inside"
            );
        }
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(CheckoutSnapshot::of(&f.repo), before);
}

/// Locks held by another git: the person's `index.lock` does not stop a session (their index
/// is never needed) and stays; the worktree's `index.lock` makes approve refuse without moving
/// the branch, and approve works once it is gone; a held branch lock stops create cleanly.
pub async fn locks_held_by_another_git(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::new();
    let user_lock = f.repo.join(".git/index.lock");
    std::fs::write(&user_lock, "held by the person's editor").unwrap();
    let (spec, _) = f.spec(vcs, "Locked").await;
    vcs.create_worktree(&spec)
        .await
        .expect("create despite the person's index.lock");
    write(
        &spec.path,
        "src/date.rs",
        "pub fn year() -> u32 {\n    2026\n}\n",
    );
    vcs.diff(&spec.path, &spec.base)
        .await
        .expect("diff despite the person's index.lock");

    let wt_index = git(
        &spec.path,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    let wt_lock = format!("{}.lock", wt_index.trim());
    std::fs::write(&wt_lock, "held by another git").unwrap();
    let message = expect_error(
        vcs.commit(&f.repo, &spec.path, &spec.base, "Locked", None)
            .await,
        ErrorKind::Vcs,
        "approve while the worktree's index is locked",
    );
    assert!(message.contains("index.lock"), "names the lock: {message}");
    assert_eq!(
        git_rev(&f.repo, &format!("refs/heads/{}", spec.branch)),
        spec.base,
        "branch unmoved"
    );
    assert!(spec.path.join("src/date.rs").exists(), "the worktree stays");
    std::fs::remove_file(&wt_lock).unwrap();
    vcs.commit(&f.repo, &spec.path, &spec.base, "Unlocked", None)
        .await
        .expect("approve once the lock is gone");
    assert_eq!(
        std::fs::read_to_string(&user_lock).unwrap(),
        "held by the person's editor",
        "the person's lock is untouched"
    );
    std::fs::remove_file(&user_lock).unwrap();

    let (spec, _) = f.spec(vcs, "Ref locked").await;
    let ref_lock = f
        .repo
        .join(".git/refs/heads")
        .join(format!("{}.lock", spec.branch));
    std::fs::create_dir_all(ref_lock.parent().unwrap()).unwrap();
    std::fs::write(&ref_lock, "").unwrap();
    let message = expect_error(
        vcs.create_worktree(&spec).await,
        ErrorKind::Vcs,
        "a held branch lock",
    );
    assert!(message.contains("lock"), "says it is locked: {message}");
    assert!(!spec.path.exists(), "no folder is left");
    assert!(
        !git_branch_exists(&f.repo, &spec.branch),
        "no branch is left"
    );
    assert_eq!(git_worktrees(&f.repo).len(), 1, "no registration is left");
    std::fs::remove_file(&ref_lock).unwrap();
}

/// A repo and a home with spaces and non-ASCII in their paths, and files named so, go through
/// create, diff (a patch git applies) and commit.
pub async fn paths_with_spaces_and_non_ascii(vcs: &dyn Vcs) {
    if git_missing() {
        return;
    }
    let f = Fixture::named("my repo ünï", "home dir ✓");
    let (spec, _) = f.spec(vcs, "Ünïcödé paths").await;
    vcs.create_worktree(&spec).await.expect("create");
    let wt = &spec.path;
    write(wt, "a file with spaces.txt", "spaces\n");
    write(wt, "naïve café.md", "accents\n");
    write(wt, "日本/テスト.txt", "kanji\n");
    write(wt, "say \"hi\".txt", "quotes\n");
    write(wt, "README.md", "# fixture, edited\n");
    std::fs::create_dir_all(wt.join("new dir")).unwrap();
    std::fs::rename(wt.join("old/name.txt"), wt.join("new dir/ñame.txt")).unwrap();

    let diff = vcs.diff(wt, &spec.base).await.expect("diff");
    let paths: Vec<&str> = diff.stat.files.iter().map(|f| f.path.as_str()).collect();
    for expected in [
        "a file with spaces.txt",
        "naïve café.md",
        "日本/テスト.txt",
        "say \"hi\".txt",
        "new dir/ñame.txt",
    ] {
        assert!(paths.contains(&expected), "{expected} in {paths:?}");
    }
    assert_patch_rebuilds_worktree(&f, wt, &spec.base, &diff.patch);

    let listed = vcs.list_worktrees(&f.repo, &f.root()).await.unwrap();
    assert_eq!(listed.len(), 1);
    let id = vcs
        .commit(&f.repo, wt, &spec.base, "Ünïcödé", None)
        .await
        .expect("commit");
    let files = tree_files(&f.repo, &id);
    assert!(files.contains_key("日本/テスト.txt") && files.contains_key("new dir/ñame.txt"));
    assert!(!wt.exists());
}
