//! recover(): cleaning up after a restart (interrupted sessions fail, leftovers go, a branch the agent committed to stays).
//!
//! - Sessions still `queued` or `running` that nobody supervises are healed (`heal.rs`): a
//!   live agent is adopted, a turn whose agent ended while nobody watched is finished from
//!   its output, and only a start cut short before its turn was planned fails (its
//!   worktree removed, its branch deleted unless the agent committed to it).
//! - `awaiting_approval` and `stopped` sessions, and runs a live supervisor holds, are left
//!   alone, but for a workflow whose driver died between two phases (`workflow.json` not
//!   done, its driver lock free, no turn under way): it is driven on to its end
//!   (`workflow::resume`).
//! - `approving` and `rejecting` sessions (an approve or reject cut short) are settled, as the
//!   next approve or reject would settle them (`journal.rs`), unless another process is at it.
//! - Worktree folders under `worktrees/` that belong to no live session are removed, except
//!   those a record that cannot be read may own: a worktree whose owner is unknown is kept.
//! - What a box that no longer runs left (its cgroup, its sockets) is removed.
//! - Temp files of record writes cut short (`sessions/.tmp-*.partial`), older than a minute,
//!   are removed.
//! - What cannot be cleaned or read is reported, and tried again next time: a session whose
//!   event log cannot be read is listed as unreadable and left as it is; the others go on.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::cleanup::{BranchFate, discard_failed};
use super::control::RunFiles;
use super::heal::{self, Healed};
use super::journal;
use super::parts::{Adapters, Launcher, Records};
use runner_contract::error::{ErrorKind, Result};
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::options::{CleanupError, RecoveryReport};
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::vcs::Vcs;

pub(super) async fn recover(launcher: &Launcher) -> Result<RecoveryReport> {
    let (records, adapters) = (&launcher.run.records, &launcher.run.adapters);
    let mut report = RecoveryReport::default();
    let listing = records.store.list()?;
    // The worktree folders (`<id8>`) an unreadable record may own; `None`: any of them.
    let mut unknown_owners: Option<HashSet<String>> = Some(HashSet::new());
    for (path, error) in listing.unreadable {
        let id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| SessionId::parse(s).ok());
        match (&mut unknown_owners, id) {
            (Some(owners), Some(id)) => {
                owners.insert(id.short());
            }
            _ => unknown_owners = None,
        }
        report.unreadable.push(CleanupError {
            session_id: id,
            path,
            message: format!(
                "{error}; its worktree and branch are kept until the record is fixed or moved away"
            ),
        });
    }
    records
        .store
        .remove_stale_temp_files(std::time::Duration::from_secs(60));
    for record in &listing.records {
        if matches!(
            record.state,
            SessionState::Approving | SessionState::Rejecting
        ) {
            settle_cut_short(records, adapters, record, &mut report).await;
            continue;
        }
        if matches!(record.state, SessionState::Queued | SessionState::Running) {
            match heal::heal(launcher, record).await {
                Ok(Healed::Nothing) => {}
                Ok(Healed::Adopted) => report.adopted.push(record.session_id),
                Ok(Healed::Finished) => report.finished.push(record.session_id),
                Ok(Healed::Failed) => {
                    report.failed.push(record.session_id);
                    if let Ok(now) = records.store.get(&record.session_id)
                        && let Ok(BranchFate::Kept) = branch_fate(adapters.vcs.as_ref(), &now).await
                    {
                        report.kept_branches.push(now.branch.clone());
                    }
                }
                // A log that cannot be read is that session's alone: listed, and the rest go on.
                Err(e) if e.kind() == ErrorKind::CorruptRecord => {
                    report.unreadable.push(CleanupError {
                        session_id: Some(record.session_id),
                        path: RunFiles::in_home(&records.home, &record.session_id).events(),
                        message: format!(
                            "{e}; the session is left running, with its worktree and branch"
                        ),
                    })
                }
                Err(e) => report.cleanup_errors.push(CleanupError {
                    session_id: Some(record.session_id),
                    path: record.worktree_path.clone(),
                    message: e.to_string(),
                }),
            }
        } else if record.state == SessionState::Failed && record.worktree_path.exists() {
            // An earlier cleanup failed: try again.
            clean_failed(records, adapters, record, &mut report).await;
        }
    }
    // After the turns were healed: a workflow whose driver died goes on.
    for record in &records.store.list()?.records {
        match super::workflow::resume(launcher, record).await {
            Ok(true) => report.resumed_workflows.push(record.session_id),
            Ok(false) => {}
            Err(e) if e.kind() == ErrorKind::CorruptRecord => {
                report.unreadable.push(CleanupError {
                    session_id: Some(record.session_id),
                    path: RunFiles::in_home(&records.home, &record.session_id)
                        .dir()
                        .to_owned(),
                    message: format!("{e}; its workflow is left where it was"),
                })
            }
            Err(e) => report.cleanup_errors.push(CleanupError {
                session_id: Some(record.session_id),
                path: record.worktree_path.clone(),
                message: e.to_string(),
            }),
        }
    }
    let sessions = records.store.list()?.records;
    clean_boxes(&records.home, adapters, &sessions);
    remove_orphan_worktrees(
        &records.home,
        adapters.vcs.as_ref(),
        &sessions,
        unknown_owners.as_ref(),
        &mut report,
    )
    .await;
    Ok(report)
}

/// Removes what a box that no longer runs left (its cgroup, its sockets): a box killed
/// with its outer process cannot clean up after itself.
fn clean_boxes(home: &Home, adapters: &Adapters, sessions: &[SessionRecord]) {
    let Some(confinement) = &adapters.confinement else {
        return;
    };
    for record in sessions {
        if !matches!(record.state, SessionState::Queued | SessionState::Running) {
            confinement.cleanup(&home.run_dir(&record.session_id));
        }
    }
}

/// Finishes or takes back an approve or reject cut short, unless a live process holds the
/// session's lock (it is at it now).
async fn settle_cut_short(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
    report: &mut RecoveryReport,
) {
    let settled = match journal::SessionLock::try_acquire(&records.home, &record.session_id) {
        Ok(None) => return,
        Ok(Some(_lock)) => match records.store.get(&record.session_id) {
            Ok(now) => journal::settle(records, adapters, now).await,
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    match settled {
        Ok(_) => report.settled.push(record.session_id),
        Err(e) => report.cleanup_errors.push(CleanupError {
            session_id: Some(record.session_id),
            path: record.worktree_path.clone(),
            message: e.to_string(),
        }),
    }
}

/// What happened to a failed session's branch: kept when the agent committed to it.
async fn branch_fate(vcs: &dyn Vcs, record: &SessionRecord) -> Result<BranchFate> {
    if !vcs.branch_exists(&record.repo_path, &record.branch).await? {
        return Ok(BranchFate::Absent);
    }
    Ok(BranchFate::Kept)
}

async fn clean_failed(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
    report: &mut RecoveryReport,
) {
    match discard_failed(&records.home, adapters, record).await {
        Ok(BranchFate::Kept) => report.kept_branches.push(record.branch.clone()),
        Ok(_) => {}
        Err(e) => report.cleanup_errors.push(CleanupError {
            session_id: Some(record.session_id),
            path: record.worktree_path.clone(),
            message: e.to_string(),
        }),
    }
}

/// Worktree folders on disk that no queued, running, awaiting or stopped session owns.
async fn remove_orphan_worktrees(
    home: &Home,
    vcs: &dyn Vcs,
    records: &[SessionRecord],
    unknown_owners: Option<&HashSet<String>>,
    report: &mut RecoveryReport,
) {
    // A worktree that a record we cannot read may own is not provably abandoned.
    let owner_unknown = |path: &Path| match unknown_owners {
        None => true,
        Some(owners) => path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| owners.contains(n)),
    };
    let kept: HashSet<PathBuf> = records
        .iter()
        // A failed session whose change was kept owns its worktree until it is rejected.
        .filter(|r| !r.state.is_final() || (r.state == SessionState::Failed && r.kept))
        .map(|r| r.worktree_path.clone())
        .collect();
    let mut repos: Vec<PathBuf> = records.iter().map(|r| r.repo_path.clone()).collect();
    repos.sort();
    repos.dedup();
    let root = home.worktrees_dir();
    // Worktrees that git knows of, per repo we have records for.
    for repo in &repos {
        let Ok(listed) = vcs.list_worktrees(repo, &root).await else {
            continue;
        };
        for wt in listed {
            if kept.contains(&wt.path) {
                continue;
            }
            if owner_unknown(&wt.path) {
                if !report.kept_worktrees.contains(&wt.path) {
                    report.kept_worktrees.push(wt.path);
                }
                continue;
            }
            match vcs.remove_worktree(repo, &wt.path).await {
                Ok(()) => report.removed_worktrees.push(wt.path),
                Err(e) => report.cleanup_errors.push(CleanupError {
                    session_id: None,
                    path: wt.path,
                    message: e.to_string(),
                }),
            }
        }
        let _ = vcs.prune(repo).await;
    }
    // Folders left on disk that no repo lists any more.
    for folder in session_folders(&root) {
        if kept.contains(&folder) || report.removed_worktrees.contains(&folder) {
            continue;
        }
        if owner_unknown(&folder) {
            if !report.kept_worktrees.contains(&folder) {
                report.kept_worktrees.push(folder);
            }
            continue;
        }
        match std::fs::remove_dir_all(&folder) {
            Ok(()) => report.removed_worktrees.push(folder),
            Err(e) => report.cleanup_errors.push(CleanupError {
                session_id: None,
                path: folder,
                message: e.to_string(),
            }),
        }
    }
}

/// `worktrees/<repoKey>/<id8>` folders.
fn session_folders(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(repos) = std::fs::read_dir(root) else {
        return found;
    };
    for repo in repos.flatten() {
        if let Ok(sessions) = std::fs::read_dir(repo.path()) {
            found.extend(sessions.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
    }
    found.sort();
    found
}
