//! The repo profile: what a repo is, read from its files, with no model call and no way to fail.
//!
//! The first kind that matches wins, in this order (a repo can hold several, like a
//! Rust crate with a package.json for its docs):
//! 1. `package.json` → Node (see [`node`] for package managers, tests and versions);
//! 2. `Cargo.toml` → Rust, `cargo test`;
//! 3. `go.mod` → Go, `go test ./...`;
//! 4. `pyproject.toml`, `requirements.txt`, `setup.py`, `setup.cfg` or `Pipfile` → Python
//!    (see [`python`]);
//! 5. anything else, a missing folder included → `language: "unknown"` and nothing more.
//!
//! Files are read only when they are regular files of at most [`MAX_FILE_BYTES`], so a
//! FIFO, a device or a huge file in a worktree cannot hang or flood the runner; such a
//! file counts as unreadable, like a broken one.

mod native;
mod node;
mod python;

use std::fs;
use std::io::Read;
use std::path::Path;

use runner_contract::RepoProfile;

/// The largest manifest or lockfile that is read; a bigger one counts as unreadable.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// Reads what the repo at `dir` is. Never fails: a folder with nothing recognisable, or
/// one that does not exist, gives `Language::Unknown` with every other field empty.
pub fn detect_repo_profile(dir: &Path) -> RepoProfile {
    let repo = Repo(dir);
    if repo.is_file("package.json") {
        node::detect(&repo)
    } else if repo.is_file("Cargo.toml") {
        native::rust(&repo)
    } else if repo.is_file("go.mod") {
        native::go(&repo)
    } else if python::MARKERS.iter().any(|m| repo.is_file(m)) {
        python::detect(&repo)
    } else {
        RepoProfile::default()
    }
}

/// The folder being looked at, with reads that never fail.
struct Repo<'a>(&'a Path);

impl Repo<'_> {
    fn is_file(&self, name: &str) -> bool {
        fs::metadata(self.0.join(name)).is_ok_and(|m| m.is_file())
    }

    fn is_dir(&self, name: &str) -> bool {
        fs::metadata(self.0.join(name)).is_ok_and(|m| m.is_dir())
    }

    /// The text of a regular file of at most [`MAX_FILE_BYTES`], or `None`.
    fn read(&self, name: &str) -> Option<String> {
        let path = self.0.join(name);
        let meta = fs::metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return None;
        }
        let mut text = String::new();
        // `take` guards against a file that grows between the check and the read.
        fs::File::open(&path)
            .ok()?
            .take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .ok()?;
        (text.len() as u64 <= MAX_FILE_BYTES).then_some(text)
    }
}

/// Lines without `#` comments and surrounding blanks, empty ones left out.
fn meaningful_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
}
