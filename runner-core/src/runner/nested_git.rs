//! At a boxed turn's end, before the turn is said to be over: the git folders the agent
//! planted in its worktree are taken out ([`crate::Vcs::take_out_nested_git`]; ARCHITECTURE.md,
//! `vcs-git`), so the person's own `git status` there runs nothing of the agent's, and the
//! person is told what was moved and where it is.

use super::control::RunFiles;
use runner_contract::options::Isolation;
use runner_contract::session::SessionRecord;

/// The folder of the run under which turn `turn`'s `.git`s are kept.
pub(super) fn quarantine(files: &RunFiles, turn: u64) -> std::path::PathBuf {
    files
        .dir()
        .join(runner_contract::run_folder::QUARANTINE)
        .join(runner_contract::run_folder::quarantined(turn))
}

/// Takes out what the agent of a boxed turn planted; the system note that says so, or
/// `None` when there was nothing (or the agent was not boxed: unboxed, it is the person).
pub(super) async fn take_out(
    vcs: &dyn runner_contract::traits::vcs::Vcs,
    record: &SessionRecord,
    files: &RunFiles,
    turn: u64,
) -> Option<String> {
    if record.isolation != Isolation::Box {
        return None;
    }
    let worktree = record.worktree_spec();
    let found = match vcs
        .take_out_nested_git(&worktree, &quarantine(files, turn))
        .await
    {
        Ok(found) if found.is_empty() => return None,
        Ok(found) => found,
        Err(e) => {
            return Some(format!(
                "the worktree {} could not be checked for git folders the agent planted ({e}): \
                 do not run git in it before looking for a `.git` below its top; reject the \
                 session if in doubt",
                worktree.path.display()
            ));
        }
    };
    let mut said = vec![
        "the agent left git of its own in its worktree, which your git would have entered \
         (running the programs its config names)"
            .to_owned(),
    ];
    for (path, to) in &found.moved {
        said.push(format!("moved {path} to {}", to.display()));
    }
    for path in &found.removed {
        said.push(format!("removed {path} (it could not be moved out)"));
    }
    for path in &found.gitlinks {
        said.push(format!(
            "dropped the submodule entry {path} from the worktree's index (the base has none \
             there)"
        ));
    }
    for failure in &found.failed {
        said.push(format!(
            "could not take out: {failure}; do not run git in {} and reject the session",
            worktree.path.display()
        ));
    }
    Some(said.join("; "))
}
