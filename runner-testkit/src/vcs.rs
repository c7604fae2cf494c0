//! The `Vcs` conformance suite: free async functions over `&dyn Vcs`, each on real
//! repositories in temp folders, set up and checked with the `git` program.
//!
//! Every function skips (and fails under `CI=true`) when `git` is not installed.
//! An adapter's `tests/conformance.rs` calls each of them.

mod approve;
mod checkout;
mod diff;
mod faults;
pub mod fixture;
mod names;
mod recover;

pub use approve::{
    commit_makes_one_commit_on_the_branch, nothing_to_approve, reject_removes_worktree_and_branch,
};
pub use checkout::worktree_leaves_the_checkout_untouched;
pub use diff::diff_covers_every_kind_of_change;
pub use faults::{
    leftovers_are_refused_cleanly, locks_held_by_another_git, paths_with_spaces_and_non_ascii,
    unwritable_folder_leaves_nothing,
};
pub use names::{
    base_commit_and_repo_key, branch_names_are_valid_refs, refuses_what_is_not_a_repo_with_commits,
};
pub use recover::recovery_helpers;

/// The words every refusal of a bad repo carries, whichever adapter refuses.
pub const NOT_A_REPO: &str = "is not a git repo or has no commits yet";
/// The words of the refusal to approve nothing, whichever adapter refuses.
pub const NOTHING_TO_APPROVE: &str = "nothing to approve: the agent made no changes";

fn git_missing() -> bool {
    if fixture::git_available() {
        return false;
    }
    super::skip("the git program is not installed");
    true
}
