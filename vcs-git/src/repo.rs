//! Opening the person's repository, its base commit and its key.

use std::path::{Path, PathBuf};

use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use runner_contract::Result;

use crate::error;

/// The name used for commits and reflogs when the git config names nobody.
pub(crate) const FALLBACK_NAME: &str = "codehands";
/// The e-mail address used when the git config has none.
pub(crate) const FALLBACK_EMAIL: &str = "codehands@localhost";

/// Opens `path` as a repository with a checkout, refusing anything else with the
/// words. For reading only: see [`open_to_write`] for anything that writes a ref.
pub(crate) fn open_to_read(path: &Path) -> Result<gix::Repository> {
    if !path.exists() {
        return Err(error::not_a_repo(path, "the path does not exist"));
    }
    let repo = match gix::open(path) {
        Ok(repo) => repo,
        Err(_) => {
            // A folder inside a checkout is a common slip: name the top folder to pass instead.
            let why = match gix::discover(path)
                .ok()
                .and_then(|r| r.workdir().map(Path::to_owned))
            {
                Some(top) => format!("it is inside the checkout at {}", top.display()),
                None => "there is no .git in it".to_owned(),
            };
            return Err(error::not_a_repo(path, &why));
        }
    };
    if repo.workdir().is_none() {
        return Err(error::not_a_repo(
            path,
            "it is a bare repo without a checkout",
        ));
    }
    Ok(repo)
}

/// [`open_to_read`], with a committer identity for the reflogs that ref edits write: the git
/// config's, or ours when it names nobody. Readers skip this: finding the committer reads the
/// clock's time zone, and with no identity configured the repository is opened twice.
pub(crate) fn open_to_write(path: &Path) -> Result<gix::Repository> {
    let repo = open_to_read(path)?;
    if repo.committer().is_some() {
        return Ok(repo);
    }
    // Ref edits write reflogs, which need a committer: without one in the git config, use
    // ours. It goes in as an open option rather than into this handle's config, because
    // `add_worktree` opens the new worktree with the same options and writes its HEAD
    // reflog there (with only the handle's config changed, that fails on a machine
    // with no git identity).
    let overrides = [
        format!("committer.name={FALLBACK_NAME}"),
        format!("committer.email={FALLBACK_EMAIL}"),
    ];
    gix::open_opts(
        path,
        gix::open::Options::default().config_overrides(overrides),
    )
    .map_err(|e| error::gix("cannot set up a committer identity", &e))
}

/// An edit that moves `name` from `from` to `to` only if it still points at `from`, writing
/// `message` to its reflog as git's own commands do.
pub(crate) fn logged_update(
    name: gix::refs::FullName,
    from: gix::ObjectId,
    to: gix::refs::Target,
    message: String,
) -> RefEdit {
    RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: message.into(),
            },
            expected: PreviousValue::MustExistAndMatch(gix::refs::Target::Object(from)),
            new: to,
        },
        name,
        deref: false,
    }
}

/// The commit HEAD of `repo` (opened from `path`) names; a repo without one is refused.
pub(crate) fn head_commit(repo: &gix::Repository, path: &Path) -> Result<gix::ObjectId> {
    match repo.head_commit() {
        Ok(commit) => Ok(commit.id),
        Err(_) => Err(error::not_a_repo(path, "HEAD names no commit")),
    }
}

/// The HEAD commit of `path`, as 40 hex characters.
pub(crate) fn base_commit(path: &Path) -> Result<String> {
    Ok(head_commit(&open_to_read(path)?, path)?.to_string())
}

/// 12 hex characters of the SHA-1 of the origin URL, or of the repo's canonical absolute path.
pub(crate) fn repo_key(path: &Path) -> Result<String> {
    let repo = open_to_read(path)?;
    let origin = repo
        .config_snapshot()
        .string("remote.origin.url")
        .map(|url| url.to_vec())
        .filter(|url| !url.is_empty());
    let bytes = match origin {
        Some(url) => url,
        None => {
            let top = top_folder(&repo)?;
            top.as_os_str().as_encoded_bytes().to_vec()
        }
    };
    let hex = sha1_smol::Sha1::from(&bytes).digest().to_string();
    Ok(hex[..12].to_owned())
}

/// The canonical absolute path of the repo's checkout.
pub(crate) fn top_folder(repo: &gix::Repository) -> Result<PathBuf> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| error::vcs("the repository has no checkout"))?;
    std::fs::canonicalize(workdir).map_err(|e| error::io("cannot resolve", workdir, &e))
}

/// Parses a 40-hex commit id given by the caller.
pub(crate) fn parse_commit(repo: &gix::Repository, base: &str) -> Result<gix::ObjectId> {
    let id = gix::ObjectId::from_hex(base.as_bytes()).map_err(|_| {
        runner_contract::Error::invalid_input(format!(
            "base {base:?} is not a full commit id: pass the 40 hex characters base_commit returned"
        ))
    })?;
    match repo.find_commit(id) {
        Ok(_) => Ok(id),
        Err(_) => Err(runner_contract::Error::invalid_input(format!(
            "base {base} is not a commit in {}: pass the id base_commit returned for this repo",
            repo.common_dir().display()
        ))),
    }
}
