//! `codehands diff TASK`: each attempt's change against the base commit, one after the other.
//! `codehands diff ID --against ID2`: how two attempts' changes differ, file by file. Both
//! started from one base commit, so each file either of them changed is compared as the two
//! worktrees hold it: the patch turns ID2's file into ID's (`git apply` takes it on ID2's
//! worktree). Files are read from the worktrees without following any link the agents left
//! there (a link is compared as its target, as git keeps it).

use std::path::{Component, Path};
use std::process::ExitCode;

use std::io::IsTerminal;

use runner_contract::{DiffResult, Error, Result, Runner, SessionId, TaskId};
use serde::Serialize;

use super::output;

/// How one file compares between the two attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Compared {
    /// Both changed it alike.
    Same,
    /// Both changed it, differently.
    Differs,
    /// Only ID changed it.
    OnlyThis,
    /// Only ID2 changed it.
    OnlyAgainst,
}

/// One file of the comparison.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileCompared {
    path: String,
    compared: Compared,
}

/// What `diff --against --json` prints (and the review page shows).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Against {
    session_id: SessionId,
    against: SessionId,
    files: Vec<FileCompared>,
    patch: String,
}

/// One attempt's change, as `diff TASK --json` prints it (a line each).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AttemptDiff {
    attempt: usize,
    session_id: SessionId,
    agent: String,
    state: runner_contract::SessionState,
    /// The change against the base commit, when its worktree is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<DiffResult>,
    /// Why there is none (approved, rejected, failed without keeping it …).
    #[serde(skip_serializing_if = "Option::is_none")]
    unavailable: Option<String>,
}

/// `codehands diff TASK`: every attempt against the base commit they all started from.
pub async fn each_attempt(
    runner: &dyn Runner,
    task: &TaskId,
    stat_only: bool,
    json: bool,
) -> Result<ExitCode> {
    let record = runner.task(task).await?;
    let terminal = std::io::stdout().is_terminal();
    for (i, attempt) in record.attempts.iter().enumerate() {
        let id = attempt.session_id;
        let state = match runner.session(&id).await {
            Ok(session) => session.state,
            Err(_) => runner_contract::SessionState::Failed,
        };
        let (diff, unavailable) = match runner.diff(&id).await {
            Ok(diff) => (Some(diff), None),
            Err(e) => (None, Some(e.message().to_owned())),
        };
        if json {
            output::json_line(&AttemptDiff {
                attempt: i + 1,
                session_id: id,
                agent: attempt.agent.to_string(),
                state,
                diff,
                unavailable,
            })?;
            continue;
        }
        output::line(&format!(
            "== attempt {} ({}, {}): {state} ==",
            i + 1,
            attempt.agent,
            id.short()
        ))?;
        match diff {
            Some(diff) => {
                if !stat_only {
                    // As `diff ID`: exact when piped, shown never obeyed on a terminal.
                    if terminal {
                        output::text(&runner_contract::present::visible(&diff.patch, true))?;
                    } else {
                        output::text(&diff.patch)?;
                    }
                }
                output::line(&super::view::stat_table(&diff.stat))?;
            }
            None => output::line(&format!(
                "  (no change to show: {})",
                runner_contract::present::visible(&unavailable.unwrap_or_default(), false)
            ))?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands diff ID --against ID2`.
pub async fn run(
    runner: &dyn Runner,
    id: &SessionId,
    other: &SessionId,
    stat_only: bool,
    json: bool,
) -> Result<ExitCode> {
    let Against { files, patch, .. } = compare(runner, id, other).await?;
    if json {
        output::json_line(&Against {
            session_id: *id,
            against: *other,
            files,
            patch,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    if !stat_only {
        output::text(&runner_contract::present::visible(&patch, true))?;
    }
    for file in &files {
        let how = match file.compared {
            Compared::Same => "same in both".to_owned(),
            Compared::Differs => "changed by both, differently".to_owned(),
            Compared::OnlyThis => format!("changed only by {}", id.short()),
            Compared::OnlyAgainst => format!("changed only by {}", other.short()),
        };
        output::line(&format!(
            " {} | {how}",
            runner_contract::present::visible(&file.path, false)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// How ID's change differs from ID2's, file by file (what `run` prints).
pub(super) async fn compare(
    runner: &dyn Runner,
    id: &SessionId,
    other: &SessionId,
) -> Result<Against> {
    let (this, that) = (runner.session(id).await?, runner.session(other).await?);
    if this.base_commit != that.base_commit {
        return Err(Error::invalid_input(format!(
            "sessions {} and {} started from different commits ({} and {}): compare each with \
             `codehands diff ID` instead",
            id.short(),
            other.short(),
            this.base_commit,
            that.base_commit
        )));
    }
    let (a, b) = (runner.diff(id).await?, runner.diff(other).await?);
    let mut paths: Vec<&str> = a
        .stat
        .files
        .iter()
        .chain(&b.stat.files)
        .map(|f| f.path.as_str())
        .collect();
    paths.sort_unstable();
    paths.dedup();
    let in_a = |p: &str| a.stat.files.iter().any(|f| f.path == p);
    let in_b = |p: &str| b.stat.files.iter().any(|f| f.path == p);
    let mut files = Vec::new();
    let mut patch = String::new();
    for path in paths {
        let mine = read_in(&this.worktree_path, path)?;
        let theirs = read_in(&that.worktree_path, path)?;
        let compared = match (in_a(path), in_b(path)) {
            _ if mine == theirs => Compared::Same,
            (true, true) => Compared::Differs,
            (true, false) => Compared::OnlyThis,
            _ => Compared::OnlyAgainst,
        };
        if compared != Compared::Same {
            patch.push_str(&file_patch(path, theirs.as_ref(), mine.as_ref())?);
        }
        files.push(FileCompared {
            path: path.to_owned(),
            compared,
        });
    }
    Ok(Against {
        session_id: *id,
        against: *other,
        files,
        patch,
    })
}

/// A file as a worktree holds it: its git mode and bytes (a link's target), `None` when it is
/// not there. A path that leaves the worktree, or goes through a link, is refused.
fn read_in(worktree: &Path, path: &str) -> Result<Option<(u16, Vec<u8>)>> {
    let relative = Path::new(path);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(Error::invalid_input(format!(
            "the diff names {path:?}, which is not a plain path in the worktree"
        )));
    }
    let mut at = worktree.to_path_buf();
    let parts: Vec<_> = relative.components().collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(format!("cannot read {}", at.display()), &e)),
        };
        let last = i + 1 == parts.len();
        if meta.file_type().is_symlink() {
            if !last {
                // Git keeps no file below a link: the agent made this; nothing is followed.
                return Ok(None);
            }
            let target = std::fs::read_link(&at)
                .map_err(|e| Error::io(format!("cannot read {}", at.display()), &e))?;
            return Ok(Some((
                0o120000,
                target.into_os_string().into_encoded_bytes(),
            )));
        }
        if last {
            if !meta.is_file() {
                return Ok(None);
            }
            let bytes = std::fs::read(&at)
                .map_err(|e| Error::io(format!("cannot read {}", at.display()), &e))?;
            let executable = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111;
            let mode = if executable != 0 { 0o100755 } else { 0o100644 };
            return Ok(Some((mode, bytes)));
        }
        if !meta.is_dir() {
            return Ok(None);
        }
    }
    Ok(None)
}

#[cfg(feature = "git")]
fn file_patch(
    path: &str,
    old: Option<&(u16, Vec<u8>)>,
    new: Option<&(u16, Vec<u8>)>,
) -> Result<String> {
    fn side<'a>(path: &'a str, v: Option<&'a (u16, Vec<u8>)>) -> Option<vcs_git::FileVersion<'a>> {
        v.map(|(mode, data)| vcs_git::FileVersion {
            path,
            mode: *mode,
            data,
        })
    }
    Ok(vcs_git::file_patch(side(path, old), side(path, new)))
}

#[cfg(not(feature = "git"))]
fn file_patch(
    _path: &str,
    _old: Option<&(u16, Vec<u8>)>,
    _new: Option<&(u16, Vec<u8>)>,
) -> Result<String> {
    Err(Error::not_in_build("comparing two attempts (git)", "git"))
}
