//! A run's tree shipped to a box on another machine, and the box's result brought back, as
//! data checked like any hostile worktree content (README.md, "Where runs run").
//!
//! - [`pack_tree`]: the worktree (never its `.git`) as a tar, the base a remote box starts from.
//! - [`read_result`]: a result tar read into memory and checked whole (paths inside the tree,
//!   no links that leave it or loop, no special files, sizes and counts capped) before
//!   anything is written; [`apply`] then makes the worktree hold exactly that tree.
//! - [`check_bundle`]: a `git bundle` of the agent's commits holds the one ref asked for.
//!
//! A result refused by any check leaves the worktree untouched.

mod bundle;
mod error;
mod pack;
mod tree;

pub use bundle::check_bundle;
pub use error::TransferError;
pub use pack::pack_tree;
pub use tree::{Entry, EntryKind, ResultTree, apply, read_result};

/// Caps on what crosses the wire either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The sum of all file sizes.
    pub max_bytes: u64,
    /// How many entries (files, folders, links).
    pub max_entries: usize,
    /// How many components a path may have (a deep tree is a cheap attack on a walker).
    pub max_depth: usize,
}

impl Default for Limits {
    /// 1 GiB, 200 000 entries, 64 levels: far above a source tree, far below a full disk.
    fn default() -> Self {
        Self {
            max_bytes: 1 << 30,
            max_entries: 200_000,
            max_depth: 64,
        }
    }
}
