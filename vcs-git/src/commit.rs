//! Approve: one commit of everything not ignored on the worktree's branch, on top of base.

use std::path::Path;

use runner_core::{Error, ErrorKind, Result, Signature};

use crate::{diff, error, repo, worktree};

/// Commits the worktree as one commit on its branch with `base` as parent, removes the
/// worktree and keeps the branch. Returns the commit id.
pub(crate) fn commit(
    repo_path: &Path,
    worktree_path: &Path,
    base: &str,
    message: &str,
    author: Option<&Signature>,
) -> Result<String> {
    if message.trim().is_empty() {
        return Err(Error::invalid_input(
            "the commit message is empty: pass one, for example `-m \"Fix the date bug\"`",
        ));
    }
    let main = repo::open_to_read(repo_path)?;
    let wt = diff::open_worktree(worktree_path, repo::open_to_write)?;
    refuse_foreign(&main, &wt, repo_path, worktree_path)?;
    let base = repo::parse_commit(&wt, base)?;
    let branch = wt
        .head_name()
        .ok()
        .flatten()
        .filter(|n| n.as_bstr().starts_with(b"refs/heads/"))
        .ok_or_else(|| {
            error::vcs(format!(
                "the worktree {} is not on a branch (its HEAD was detached): reject the session",
                worktree_path.display()
            ))
        })?;
    let tip = wt
        .find_reference(branch.as_ref())
        .and_then(|mut r| r.peel_to_id().map(|id| id.detach()))
        .map_err(|e| error::gix(format!("cannot read the worktree's branch {branch}"), &e))?;

    // Holding the worktree's index lock keeps another git from changing it while we commit.
    let index_path = wt.index_path();
    let lock = gix::lock::File::acquire_to_update_resource(
        &index_path,
        gix::lock::acquire::Fail::Immediately,
        None,
        Default::default(),
    )
    .map_err(|_| {
        error::vcs(format!(
            "another git process is using the worktree {} ({}.lock exists): wait for it to \
             finish and approve again, or delete that file if no git is running",
            worktree_path.display(),
            index_path.display()
        ))
    })?;

    let base_tree = diff::tree_of(&wt, base)?;
    let tree = crate::snapshot::worktree_tree(&wt, base_tree)?;
    if tree == base_tree {
        return Err(Error::new(
            ErrorKind::NothingToApprove,
            "nothing to approve: the agent made no changes; reject the session instead",
        ));
    }

    let now = gix::date::Time::now_local_or_utc();
    let committer = configured(wt.committer(), now)
        .unwrap_or_else(|| signature(repo::FALLBACK_NAME, repo::FALLBACK_EMAIL, now));
    let author = match author {
        Some(a) => signature(&a.name, &a.email, now),
        None => configured(wt.author(), now).unwrap_or_else(|| committer.clone()),
    };
    let summary = message.lines().next().unwrap_or_default().to_owned();
    let object = gix::objs::Commit {
        tree,
        parents: [base].into_iter().collect(),
        author,
        committer: committer.clone(),
        encoding: None,
        message: ensure_newline(message).into(),
        extra_headers: Vec::new(),
    };
    let id = wt
        .write_object(&object)
        .map_err(|e| error::gix("cannot write the commit", &e))?
        .detach();
    wt.edit_references_as(
        [repo::logged_update(
            branch.clone(),
            tip,
            gix::refs::Target::Object(id),
            format!("commit (codehands): {summary}"),
        )],
        Some(committer.to_ref(&mut gix::date::parse::TimeBuf::default())),
    )
    .map_err(|e| {
        if error::is_lock_held(&e) {
            error::vcs(format!(
                "cannot move branch {branch}: another git process holds its lock; wait for it \
                 to finish and approve again"
            ))
        } else {
            error::gix(format!("cannot move branch {branch} to the new commit"), &e)
        }
    })?;
    drop(lock);

    worktree::remove(repo_path, worktree_path).map_err(|e| {
        error::vcs(format!(
            "committed {id} on {branch}, but could not remove the worktree: {}; run \
             `codehands recover` or `git worktree remove --force {}`",
            e.message(),
            worktree_path.display()
        ))
    })?;
    Ok(id.to_string())
}

/// Refuses a worktree of another repository, and the person's own checkout.
fn refuse_foreign(
    main: &gix::Repository,
    wt: &gix::Repository,
    repo_path: &Path,
    worktree_path: &Path,
) -> Result<()> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(main.common_dir(), wt.common_dir()) {
        return Err(Error::invalid_input(format!(
            "{} is not a worktree of {}: pass the worktree codehands made for this repo",
            worktree_path.display(),
            repo_path.display()
        )));
    }
    if wt.kind() != gix::repository::Kind::LinkedWorkTree {
        return Err(Error::invalid_input(format!(
            "{} is the repo's own checkout, not a codehands worktree: codehands never commits there",
            worktree_path.display()
        )));
    }
    Ok(())
}

fn configured(
    found: Option<std::result::Result<gix::actor::SignatureRef<'_>, gix::Error>>,
    time: gix::date::Time,
) -> Option<gix::actor::Signature> {
    let found = found?.ok()?.trim();
    if found.name.is_empty() || found.email.is_empty() {
        return None;
    }
    Some(gix::actor::Signature {
        name: found.name.to_owned(),
        email: found.email.to_owned(),
        time,
    })
}

fn signature(name: &str, email: &str, time: gix::date::Time) -> gix::actor::Signature {
    gix::actor::Signature {
        name: name.into(),
        email: email.into(),
        time,
    }
}

fn ensure_newline(message: &str) -> String {
    let trimmed = message.trim_end();
    format!("{trimmed}\n")
}
