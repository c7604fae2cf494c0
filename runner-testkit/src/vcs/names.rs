//! The suite's part on inputs: bad repos, the base commit, the repo key, branch names.

use super::fixture::{Fixture, git, git_branch_exists, git_output, git_rev};
use super::{NOT_A_REPO, git_missing};
use crate::expect_error;
use runner_contract::{ErrorKind, SessionId, Vcs};

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
