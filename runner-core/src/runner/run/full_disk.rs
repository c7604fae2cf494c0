//! A turn that meets a full or read-only disk ends as `disk_full` (`runner/disk.rs`).

use crate::runner::disk;
use runner_contract::error::{Error, ErrorKind};
use runner_contract::event::FailureKind;

use super::Supervisor;

impl Supervisor {
    /// Ends the turn as `disk_full`: the agent's tree is gone by now; the message names the
    /// disk and what it has left (measured before the reserve gives its room back).
    pub(super) async fn fail_disk_full(&mut self, stderr: Option<String>, exit_code: Option<i32>) {
        self.fail_disk_full_costing(stderr, exit_code, None).await;
    }

    pub(super) async fn fail_disk_full_costing(
        &mut self,
        stderr: Option<String>,
        exit_code: Option<i32>,
        cost_usd: Option<f64>,
    ) {
        let message = self.full_error().message().to_owned();
        self.files.release_reserve();
        self.fail(FailureKind::DiskFull, message, stderr, exit_code, cost_usd)
            .await;
    }

    /// The error of the full disk met: which disk, what it has left, what to do.
    pub(super) fn full_error(&self) -> Error {
        let detail = self.full.as_ref().map_or("", |e| e.message());
        let at = self
            .full_at
            .as_deref()
            .unwrap_or(self.run.records.home.root());
        disk::full(at, detail, "run `codehands recover`")
    }

    /// Notes a failed write: one that found the disk full or read-only ends the turn.
    pub(super) fn saw(&mut self, error: &Error) {
        if disk::is_full(error) && self.full.is_none() {
            tracing::error!(session = %self.record.session_id, "{error}");
            self.full = Some(error.clone());
        }
    }

    /// The agent's output could not all be written (the relay carrying it to its file
    /// failed): on a full disk that is the turn's end.
    pub(super) fn output_lost(&mut self, stdout: &std::path::Path, cut: bool) {
        if self.full.is_none() && disk::looks_full(stdout) {
            let detail = format!(
                "the agent's output could not be written to {}",
                stdout.display()
            );
            self.full = Some(Error::new(ErrorKind::DiskFull, detail));
        } else if cut {
            self.note(cut_short(stdout));
        }
    }

    /// Whether the disk of the run's files or of the worktree has (almost) no room left:
    /// then an agent that ended without a result most likely ended for it.
    pub(super) fn disk_looks_full(&mut self) {
        if self.met_full_disk {
            self.full = Some(Error::new(
                ErrorKind::DiskFull,
                "the disk was full while the turn ran (its reserve is used up), and the agent ended without a result",
            ));
            return;
        }
        for path in [
            self.files.dir().to_owned(),
            self.record.worktree_path.clone(),
        ] {
            if disk::looks_full(&path) {
                self.full = Some(Error::new(
                    ErrorKind::DiskFull,
                    "the agent ended without a result while the disk had no room left",
                ));
                self.full_at = Some(path);
                return;
            }
        }
    }
}

/// The note for an agent's last line left without its end when its output could not all be
/// written: it is no line of the agent's, and is skipped.
pub(super) fn cut_short(stdout: &std::path::Path) -> String {
    format!(
        "the agent's output could not all be written to {} (a full disk): its last line is cut short and was skipped",
        stdout.display()
    )
}
