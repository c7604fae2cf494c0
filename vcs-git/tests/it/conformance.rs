//! The `Vcs` conformance suite against `GitVcs`, on real repositories in temp folders.

use runner_testkit::vcs as suite;
use vcs_git::GitVcs;

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                suite::$name(&GitVcs::new()).await;
            }
        )*
    };
}

conformance!(
    refuses_what_is_not_a_repo_with_commits,
    base_commit_and_repo_key,
    branch_names_are_valid_refs,
    worktree_leaves_the_checkout_untouched,
    diff_covers_every_kind_of_change,
    commit_makes_one_commit_on_the_branch,
    nothing_to_approve,
    reject_removes_worktree_and_branch,
    recovery_helpers,
    leftovers_are_refused_cleanly,
    unwritable_folder_leaves_nothing,
    locks_held_by_another_git,
    paths_with_spaces_and_non_ascii,
);
