//! The suite's part on the diff: every kind of change, a stat like git's, a patch git applies.

use std::path::Path;

use super::fixture::{
    Fixture, binary_bytes, git, git_numstat, git_with_stdin, numbered_lines, write,
};
use super::git_missing;
use runner_contract::{FileStat, Vcs};

/// Makes every kind of change in a fresh worktree: edits, a missing final newline, a deletion,
/// two renames, binary edits and additions, untracked files in a new folder, an empty file,
/// ignored files, and on unix a mode change and a symlink.
pub(super) fn change_everything(wt: &Path) {
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
pub(super) fn assert_patch_rebuilds_worktree(f: &Fixture, wt: &Path, base: &str, patch: &str) {
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
    let empty = vcs.diff(&spec).await.unwrap();
    assert!(
        empty.stat.is_empty() && empty.patch.is_empty(),
        "no change, no diff: {empty:?}"
    );

    change_everything(wt);
    let diff = vcs.diff(&spec).await.expect("diff");
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
    let again = vcs.diff(&spec).await.unwrap();
    assert_eq!(again, diff, "diff is stable and changes nothing");

    assert_patch_rebuilds_worktree(&f, wt, &spec.base, &diff.patch);
    assert_eq!(
        stat_as_numstat(&diff.stat.files),
        git_numstat(wt, &spec.base),
        "the stat matches git's numstat"
    );
}
