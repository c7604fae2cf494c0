//! Repo keys become folder names, so they are checked before any path is built.

use runner_contract::Result;

/// How long a repo key is: the first 12 hex characters of a SHA-1, as `Vcs::repo_key` makes it.
pub const REPO_KEY_LEN: usize = runner_contract::RepoKey::LEN;

/// Refuses anything that is not exactly 12 lowercase hex characters (`3f2a9c1e0b7d`).
///
/// `../x`, `a/b`, upper case, the empty string and every other shape are refused with
/// `ErrorKind::InvalidInput`, so a key can never climb out of the memory folder.
pub fn validate_repo_key(key: &str) -> Result<()> {
    runner_contract::RepoKey::parse(key).map(drop)
}
