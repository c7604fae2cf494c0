//! Branch names from prompts, and the branch questions and changes recovery needs.

use std::path::Path;

use runner_contract::{Error, Result, SessionId};

use crate::{error, repo};

/// How many characters of the prompt the slug keeps; the whole name stays under 60.
const SLUG_MAX: usize = 40;

/// `codehands/<slug>-<id8>`: ASCII letters and digits of the prompt, lower-cased, every other
/// run of characters one `-`, at most [`SLUG_MAX`] long, `task` when nothing is left.
///
/// Only `[a-z0-9-]` reach the slug and it never starts or ends with `-`, so no prompt can break
/// git's ref rules (no `..`, `@{`, `.lock`, leading `-` or `.`, control characters, spaces).
pub(crate) fn branch_name(prompt: &str, session_id: &SessionId) -> String {
    format!("codehands/{}-{}", slug(prompt), session_id.short())
}

fn slug(prompt: &str) -> String {
    // Whole words only: a word that would pass the limit ends the slug (a branch named
    // `…-to-che-` reads as a typo). A single word longer than the limit is cut, as there
    // is nothing better to show.
    let words = prompt
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty());
    let mut out = String::with_capacity(SLUG_MAX);
    for word in words {
        let word = word.to_ascii_lowercase();
        let needed = if out.is_empty() {
            word.len()
        } else {
            word.len() + 1
        };
        if out.len() + needed > SLUG_MAX {
            if out.is_empty() {
                out.push_str(&word[..SLUG_MAX]);
            }
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    if out.is_empty() {
        out.push_str("task");
    }
    out
}

/// `refs/heads/<branch>`, refusing a name git would not accept.
pub(crate) fn full_name(branch: &str) -> Result<gix::refs::FullName> {
    let invalid = || {
        Error::invalid_input(format!(
            "{branch:?} is not a valid branch name: pass a name like codehands/fix-the-bug-3f2a9c1e"
        ))
    };
    if branch.is_empty() || branch.starts_with("refs/") || branch.starts_with('-') {
        return Err(invalid());
    }
    gix::refs::FullName::try_from(format!("refs/heads/{branch}")).map_err(|_| invalid())
}

/// Whether `refs/heads/<branch>` exists.
pub(crate) fn exists(repo_path: &Path, branch: &str) -> Result<bool> {
    let repo = repo::open_to_read(repo_path)?;
    let name = full_name(branch)?;
    repo.try_find_reference(name.as_ref())
        .map(|r| r.is_some())
        .map_err(|e| error::gix(format!("cannot read branch {branch}"), &e))
}

/// Removes the lock file of a session branch that a codehands process killed while moving or
/// deleting it left behind. Only for the branch of a session whose lock the caller holds
/// (approve, reject): no one else moves a session's branch, so such a lock is stale.
pub(crate) fn clear_stale_lock(repo: &gix::Repository, branch: &str) -> Result<()> {
    full_name(branch)?;
    let lock = repo
        .common_dir()
        .join("refs/heads")
        .join(format!("{branch}.lock"));
    match std::fs::remove_file(&lock) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(error::io("cannot clear the stale lock", &lock, &e)),
    }
}

/// Deletes `refs/heads/<branch>`; a branch that is already gone is not an error.
///
/// A plain ref deletion: unlike gix's branch deletion it does not rewrite the repository's
/// config (our branches have no `branch.*` section), so a process killed here cannot leave
/// a `config.lock` behind in the person's repository.
pub(crate) fn delete(repo_path: &Path, branch: &str) -> Result<()> {
    use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
    let repo = repo::open_to_write(repo_path)?;
    let name = full_name(branch)?;
    if branch.starts_with("codehands/") {
        clear_stale_lock(&repo, branch)?;
    }
    let Some(tip) = tip(&repo, branch)? else {
        return Ok(());
    };
    let checked_out: Vec<String> = crate::registry::all(repo.common_dir())?
        .into_iter()
        .filter(|r| {
            std::fs::read_to_string(r.admin.join("HEAD"))
                .is_ok_and(|head| head.trim() == format!("ref: {}", name.as_bstr()))
        })
        .map(|r| r.checkout.unwrap_or(r.admin).display().to_string())
        .collect();
    if !checked_out.is_empty() {
        return Err(error::vcs(format!(
            "cannot delete branch {branch}: it is checked out in {}; remove that worktree \
             first (reject the session), then delete the branch",
            checked_out.join(", ")
        )));
    }
    repo.edit_reference(RefEdit {
        change: Change::Delete {
            expected: PreviousValue::MustExistAndMatch(gix::refs::Target::Object(tip)),
            log: RefLog::AndReference,
        },
        name,
        deref: false,
    })
    .map(drop)
    .map_err(|e| {
        if error::is_lock_held(&e) {
            error::locked(format!(
                "cannot delete branch {branch}: another git process holds a lock on it; \
                 wait for it to finish and try again ({})",
                error::chain(&e)
            ))
        } else {
            error::gix(format!("cannot delete branch {branch}"), &e)
        }
    })
}

/// The commit `refs/heads/<branch>` points to.
pub(crate) fn tip(repo: &gix::Repository, branch: &str) -> Result<Option<gix::ObjectId>> {
    let name = full_name(branch)?;
    let found = repo
        .try_find_reference(name.as_ref())
        .map_err(|e| error::gix(format!("cannot read branch {branch}"), &e))?;
    match found {
        None => Ok(None),
        Some(mut reference) => reference
            .peel_to_id()
            .map(|id| Some(id.detach()))
            .map_err(|e| error::gix(format!("cannot resolve branch {branch}"), &e)),
    }
}

/// Whether `branch` holds commits that `base` does not (the agent committed).
pub(crate) fn has_commits_beyond(repo_path: &Path, branch: &str, base: &str) -> Result<bool> {
    let repo = repo::open_to_read(repo_path)?;
    let base = repo::parse_commit(&repo, base)?;
    let Some(tip) = tip(&repo, branch)? else {
        return Err(Error::not_found(format!(
            "branch {branch} does not exist in {}: it was deleted or never made",
            repo_path.display()
        )));
    };
    if tip == base {
        return Ok(false);
    }
    let mut walk = repo
        .rev_walk([tip])
        .with_hidden([base])
        .all()
        .map_err(|e| error::gix(format!("cannot walk branch {branch}"), &e))?;
    match walk.next() {
        None => Ok(false),
        Some(Ok(_)) => Ok(true),
        Some(Err(e)) => Err(error::gix(format!("cannot walk branch {branch}"), &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> SessionId {
        SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap()
    }

    #[test]
    fn slugs_keep_words_and_drop_the_rest() {
        assert_eq!(
            branch_name("Fix the date bug!", &id()),
            "codehands/fix-the-date-bug-3f2a9c1e"
        );
        assert_eq!(branch_name("", &id()), "codehands/task-3f2a9c1e");
        assert_eq!(branch_name("--..//@{}", &id()), "codehands/task-3f2a9c1e");
        assert_eq!(
            branch_name("日本語のテキスト", &id()),
            "codehands/task-3f2a9c1e"
        );
        assert_eq!(
            branch_name("  -leading dash", &id()),
            "codehands/leading-dash-3f2a9c1e"
        );
    }

    #[test]
    fn slugs_end_at_a_whole_word() {
        assert_eq!(
            branch_name("Fix the failing test. Run npm test to check.", &id()),
            "codehands/fix-the-failing-test-run-npm-test-to-3f2a9c1e"
        );
        let one = "a".repeat(100);
        let name = branch_name(&one, &id());
        assert_eq!(name, format!("codehands/{}-3f2a9c1e", "a".repeat(SLUG_MAX)));
    }

    #[test]
    fn slugs_are_bounded_and_never_end_in_a_dash() {
        let long = "word ".repeat(2000);
        let name = branch_name(&long, &id());
        let slug = name
            .strip_prefix("codehands/")
            .unwrap()
            .strip_suffix("-3f2a9c1e")
            .unwrap();
        assert!(slug.len() <= SLUG_MAX, "{slug}");
        assert!(!slug.ends_with('-') && !slug.starts_with('-'), "{slug}");
        let one_word = "a".repeat(10_000);
        assert_eq!(slug_len(&one_word), SLUG_MAX);
    }

    fn slug_len(prompt: &str) -> usize {
        slug(prompt).len()
    }

    proptest::proptest! {
        #[test]
        fn any_prompt_gives_a_valid_bounded_ref(prompt in ".{0,300}", raw in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let lossy = String::from_utf8_lossy(&raw).into_owned();
            for prompt in [prompt, lossy] {
                let name = branch_name(&prompt, &id());
                let slug = name.strip_prefix("codehands/").and_then(|s| s.strip_suffix("-3f2a9c1e"));
                proptest::prop_assert!(slug.is_some_and(|s| !s.is_empty() && s.len() <= SLUG_MAX
                    && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !s.starts_with('-') && !s.ends_with('-') && !s.contains("--")), "{}", name);
                proptest::prop_assert!(full_name(&name).is_ok(), "{}", name);
            }
        }
    }

    #[test]
    fn refuses_names_git_would_refuse() {
        for bad in ["", "a..b", "-x", "refs/heads/x", "a b", "x.lock", "a@{b"] {
            assert!(full_name(bad).is_err(), "accepted {bad:?}");
        }
        assert!(full_name("codehands/fix-3f2a9c1e").is_ok());
    }
}
