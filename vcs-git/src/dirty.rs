//! How many files of a person's checkout differ from HEAD (staged, changed or untracked):
//! the agent's worktree starts from HEAD, so those are not in it, and the person is told.

use std::collections::BTreeSet;
use std::path::Path;

use runner_contract::Result;

use crate::repo;

/// The number of paths with uncommitted changes in `repo`'s checkout (ignored files not
/// counted). Nothing is written: the index is read, never refreshed on disk.
pub fn uncommitted_files(repo: &Path) -> Result<usize> {
    let repo = repo::open_to_read(repo)?;
    let status = |e: &dyn std::fmt::Display| {
        runner_contract::Error::new(
            runner_contract::ErrorKind::Vcs,
            format!("cannot read the status of the checkout: {e}"),
        )
    };
    let items = repo
        .status(gix::progress::Discard)
        .map_err(|e| status(&e))?
        .untracked_files(gix::status::UntrackedFiles::Files)
        .into_iter(None)
        .map_err(|e| status(&e))?;
    let mut paths = BTreeSet::new();
    for item in items {
        let item = item.map_err(|e| status(&e))?;
        paths.insert(item.location().to_owned());
    }
    Ok(paths.len())
}
