//! Garbage collection of sessions nobody decided on: kept (`awaiting_approval`) and
//! `stopped` sessions older than a limit are rejected, which removes the worktree and the
//! branch (unless the agent committed to it, as reject and recover keep such a branch).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use super::parts::LocalRunner;
use runner_contract::error::Result;
use runner_contract::options::{GcOptions, GcReport, RepoDisk};
use runner_contract::session::{SessionRecord, SessionState};

impl LocalRunner {
    /// Rejects every kept or stopped session (a failed one whose change was kept too) older than `options.older_than` (its worktree
    /// removed, its branch too unless the agent committed to it) and reports the disk used
    /// per repo. Sessions running or being decided are never touched.
    pub(crate) async fn collect_garbage(&self, options: GcOptions) -> Result<GcReport> {
        let records = self.listing().await?.records;
        let now = SystemTime::now();
        let old = |r: &SessionRecord| {
            (matches!(
                r.state,
                SessionState::AwaitingApproval | SessionState::Stopped
            ) || (r.state == SessionState::Failed && r.kept))
                && humantime::parse_rfc3339(&r.updated_at)
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|age| age > options.older_than)
        };
        let mut report = GcReport::default();
        let before = disk_per_repo(&records);
        for record in records.iter().filter(|r| old(r)) {
            if options.dry_run {
                report.removed.push(record.session_id);
                continue;
            }
            match self.reject_and_say(&record.session_id).await {
                Ok(done) => {
                    report.removed.push(record.session_id);
                    report.kept_branches.extend(done.kept_branch);
                }
                Err(e) => report.errors.push((record.session_id, e.to_string())),
            }
        }
        let after = disk_per_repo(&records);
        report.disk = before
            .into_iter()
            .map(|(repo, bytes_before)| RepoDisk {
                bytes_after: after.get(&repo).copied().unwrap_or(0),
                repo,
                bytes_before,
            })
            .collect();
        Ok(report)
    }
}

/// The bytes in the worktrees of `records`, summed per repo.
fn disk_per_repo(records: &[SessionRecord]) -> BTreeMap<String, u64> {
    let mut disk = BTreeMap::new();
    for r in records {
        *disk.entry(r.repo_path.display().to_string()).or_default() += size(&r.worktree_path);
    }
    disk
}

/// The bytes of the files under `path`, links not followed (a worktree is the agent's).
fn size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
        .unwrap_or(0)
}
