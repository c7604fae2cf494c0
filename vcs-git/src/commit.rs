//! Approve: one commit of everything not ignored, on top of base, on the session's branch.
//!
//! Split in two so the runner can journal between them: [`prepare`] writes the commit object
//! (nothing points at it yet), [`publish`] moves the branch to it with a compare-and-swap.

use runner_contract::{Error, ErrorKind, PreparedCommit, Result, Signature, WorktreeSpec};

use crate::snapshot::Large;
use crate::{branch, diff, error, repo, session};

/// Writes the commit of the session worktree's files on top of base, and returns it with
/// the branch tip it replaces. Moves nothing.
pub(crate) fn prepare(
    spec: &WorktreeSpec,
    message: &str,
    author: Option<&Signature>,
    large_limit: u64,
) -> Result<PreparedCommit> {
    if message.trim().is_empty() {
        return Err(Error::invalid_input(
            "the commit message is empty: pass one, for example `-m \"Fix the date bug\"`",
        ));
    }
    let opened = session::open(spec, repo::open_to_read)?;
    let (main, wt) = (&opened.main, &opened.wt);
    let base = repo::parse_commit(main, &spec.base)?;
    // The branch of the session record, never the one the worktree's HEAD names.
    let tip = branch::tip(main, &spec.branch)?.ok_or_else(|| {
        Error::not_found(format!(
            "branch {} does not exist in {}: it was deleted, so the session cannot be approved; \
             reject it",
            spec.branch,
            spec.repo.display()
        ))
    })?;

    let base_tree = diff::tree_of(wt, base)?;
    let mut large = Large::new(large_limit, true);
    let tree = crate::snapshot::worktree_tree(wt, base_tree, &mut large)?;
    if tree == base_tree {
        return Err(Error::new(
            ErrorKind::NothingToApprove,
            "nothing to approve: the agent made no changes; reject the session instead",
        ));
    }

    // The identity comes from the person's repository and their own config.
    let now = gix::date::Time::now_local_or_utc();
    let committer = configured(main.committer(), now)
        .unwrap_or_else(|| signature(repo::FALLBACK_NAME, repo::FALLBACK_EMAIL, now));
    let author = match author {
        Some(a) => signature(&a.name, &a.email, now),
        None => configured(main.author(), now).unwrap_or_else(|| committer.clone()),
    };
    let object = gix::objs::Commit {
        tree,
        parents: [base].into_iter().collect(),
        author,
        committer,
        encoding: None,
        message: ensure_newline(message).into(),
        extra_headers: Vec::new(),
    };
    let id = main
        .write_object(&object)
        .map_err(|e| error::gix("cannot write the commit", &e))?
        .detach();
    Ok(PreparedCommit {
        commit: id.to_string(),
        replaces: tip.to_string(),
    })
}

/// Moves the session's branch from `prepared.replaces` to `prepared.commit`, only if it still
/// points at `prepared.replaces`; a branch already at the commit is left as it is.
pub(crate) fn publish(spec: &WorktreeSpec, prepared: &PreparedCommit) -> Result<()> {
    let main = repo::open_to_write(&spec.repo)?;
    let parse = |hex: &str| {
        gix::ObjectId::from_hex(hex.as_bytes())
            .map_err(|_| Error::invalid_input(format!("{hex:?} is not a full commit id")))
    };
    let (from, to) = (parse(&prepared.replaces)?, parse(&prepared.commit)?);
    let name = branch::full_name(&spec.branch)?;
    match branch::tip(&main, &spec.branch)? {
        Some(tip) if tip == to => return Ok(()),
        Some(tip) if tip == from => {}
        found => {
            return Err(error::vcs(format!(
                "branch {} moved while approving (it is at {}, not {from}): nothing was \
                 committed; look at the branch, then approve again",
                spec.branch,
                found.map_or_else(|| "nothing".to_owned(), |t| t.to_string())
            )));
        }
    }
    branch::clear_stale_lock(&main, &spec.branch)?;
    let summary = main
        .find_commit(to)
        .ok()
        .and_then(|c| c.message_raw().ok().map(|m| m.to_string()))
        .and_then(|m| m.lines().next().map(str::to_owned))
        .unwrap_or_default();
    main.edit_reference(repo::logged_update(
        name,
        from,
        gix::refs::Target::Object(to),
        format!("commit (codehands): {summary}"),
    ))
    .map(drop)
    .map_err(|e| {
        if error::is_lock_held(&e) {
            error::locked(format!(
                "cannot move branch {}: another git process holds its lock; wait for it \
                 to finish and approve again",
                spec.branch
            ))
        } else {
            error::gix(
                format!("cannot move branch {} to the new commit", spec.branch),
                &e,
            )
        }
    })
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
