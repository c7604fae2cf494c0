//! Starting a session: the checks before anything is made, the worktree, branch, record and
//! run folder, and taking all of it back when a step fails.

use super::control::{RunFiles, TurnPhase, TurnPlan};
use super::parts::{Adapters, LocalRunner, Records};
use super::{cleanup, control, disk, ending, follow, heal, log};
use runner_contract::error::{Error, Result};
use runner_contract::home::Home;
use runner_contract::options::{DEFAULT_BUDGET_USD, StartOptions};
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::runner::EventStream;
use runner_contract::traits::vcs::WorktreeSpec;

impl LocalRunner {
    /// Plans a turn of a running session and hands it to a supervisor; the stream follows
    /// the log from the turn's first event.
    pub(super) fn begin_turn(
        &self,
        record: &SessionRecord,
        prompt: String,
        resume_from: Option<String>,
        verify: bool,
        phase: Option<TurnPhase>,
    ) -> Result<EventStream> {
        let records = self.records();
        let id = record.session_id;
        let files = RunFiles::in_home(&records.home, &id);
        let seq_start = log::scan(&files.events(), u64::MAX, |_| false)?
            .last_seq
            .max(record.last_seq);
        let timeout_ms = phase
            .as_ref()
            .and_then(|p| p.timeout_ms)
            .or(record.timeout_ms);
        let plan = TurnPlan {
            turn: seq_start + 1,
            prompt,
            resume_from,
            verify,
            seq_start,
            phase,
            timeout_ms,
            deadline_ms: timeout_ms.map(|t| control::now_unix_ms().saturating_add(t)),
        };
        files.clear_stop();
        files.set_turn(&plan)?;
        files.clear_runner();
        heal::launch(self.launcher(), id)?;
        Ok(follow::follow(self.launcher().clone(), id, seq_start, true))
    }

    /// Starts a session like [`Runner::start`], from `base` when given (the attempts of a
    /// task all start from the commit the task found), else from the repo's HEAD.
    pub(super) async fn start_session(
        &self,
        options: StartOptions,
        base: Option<String>,
    ) -> Result<EventStream> {
        self.start_session_with(options, base, None).await
    }

    /// [`LocalRunner::start_session`], whose first turn runs `first` (its prompt and
    /// phase: a workflow's first phase) instead of the options' prompt.
    pub(super) async fn start_session_with(
        &self,
        options: StartOptions,
        base: Option<String>,
        first: Option<(String, TurnPhase)>,
    ) -> Result<EventStream> {
        // Each step's span is timed by `CODEHANDS_TIMING` (codehands::timing; ARCHITECTURE.md,
        // "Speed"): a span closes when it is dropped.
        let step = tracing::trace_span!("start.check");
        let agent = self.check(&options).await?;
        drop(step);
        let (records, adapters) = (self.records(), self.adapters());
        let id = options.session_id;
        if records.store.get(&id).is_ok() {
            return Err(Error::invalid_input(format!(
                "session {id} already exists: pick a new session id"
            )));
        }
        refuse_line_breaks(&records.home, &options.repo_path)?;
        refuse_codehands_worktree(records, &options.repo_path)?;
        let step = tracing::trace_span!("start.base_commit");
        let base = match base {
            Some(base) => base,
            None => adapters.vcs.base_commit(&options.repo_path).await?,
        };
        agent.preflight(&options.repo_path)?; // preflight.rs: before anything is made
        let mut options = options;
        if let Some(source) = &self.settings().allowances {
            // Read now, once for the session: every turn runs with what the record keeps.
            let allowances = std::mem::take(&mut options.allowances);
            options.allowances = allowances.merged(source.load(&options.repo_path)?);
        }
        let repo_key = adapters.vcs.repo_key(&options.repo_path).await?;
        drop(step);
        let step = tracing::trace_span!("start.run_files");
        let repo_path = std::path::absolute(&options.repo_path).map_err(|e| {
            Error::io(
                format!("cannot resolve {}", options.repo_path.display()),
                &e,
            )
        })?;
        let worktree = records.home.worktree_path(&repo_key, &id)?;
        // The folders the run writes in are made private now, and a link planted where
        // one of them goes is refused before anything is made. The worktree itself keeps
        // the modes git gives it (the sandbox's non-root user reads it through a bind
        // mount); the private folders above it keep other users out.
        let private = records.home.private();
        if let Some(parent) = worktree.parent() {
            private
                .ensure_dir(parent)
                .map_err(|e| start_failed(&records.home, e))?;
        }
        let run_files = RunFiles::in_home(&records.home, &id);
        run_files
            .prepare()
            .map_err(|e| start_failed(&records.home, e))?;
        // The room the turn keeps for its end on a full disk: a disk without it refuses
        // the session now, before anything else is made.
        if let Err(e) = run_files.make_reserve() {
            let _ = std::fs::remove_dir_all(run_files.dir());
            return Err(start_failed(&records.home, e));
        }
        drop(step);
        let step = tracing::trace_span!("start.record");
        let branch = adapters.vcs.branch_name(&options.prompt, &id);
        let spec = WorktreeSpec {
            repo: repo_path,
            base,
            branch,
            path: worktree.clone(),
        };
        let mut record = SessionRecord::queued(&options, repo_key, spec.clone());
        record.budget_usd = Some(options.budget_usd.unwrap_or(DEFAULT_BUDGET_USD));
        if let Err(e) = records.store.create(&record) {
            let _ = std::fs::remove_dir_all(run_files.dir());
            return Err(start_failed(&records.home, e));
        }
        // Claimed before the worktree is made, so a recover in another process leaves a start
        // under way alone (and takes over one whose process died).
        if let Some(me) = runner_process::tree::ProcessIdentity::current() {
            let _ = run_files.set_runner(&me);
        }
        drop(step);
        let step = tracing::trace_span!("start.worktree");
        if let Err(e) = adapters.vcs.create_worktree(&spec).await {
            // Nothing was started: leave no record (or run folder) behind either.
            undo_start(records, adapters, &record, &run_files).await;
            return Err(start_failed(&records.home, e));
        }
        let record = match records
            .store
            .move_to(&id, SessionState::Running, "start the session")
        {
            Ok(record) => record,
            Err(e) => {
                undo_start(records, adapters, &record, &run_files).await;
                return Err(start_failed(&records.home, e));
            }
        };
        drop(step);
        let _step = tracing::trace_span!("start.launch");
        let (prompt, phase) = match first {
            Some((prompt, phase)) => (prompt, Some(phase)),
            None => (options.prompt, None),
        };
        match self.begin_turn(&record, prompt, None, options.verify, phase) {
            Ok(stream) => Ok(stream),
            Err(e) if run_files.turn().is_none() => {
                // No turn was planned, so nothing runs or will: take it all back.
                undo_start(records, adapters, &record, &run_files).await;
                Err(start_failed(&records.home, e))
            }
            Err(e) => {
                // Nothing runs: fail the session so nothing is left behind.
                run_files.clear_runner();
                let _ = ending::fail_unplanned(self.supervision(), &record).await;
                Err(e)
            }
        }
    }
}

/// Takes back a start cut short before its turn was planned (nothing ran): the worktree and
/// the branch (no commit can be on it yet), the record, the run folder.
pub(super) async fn undo_start(
    records: &Records,
    adapters: &Adapters,
    record: &SessionRecord,
    files: &RunFiles,
) {
    if let Err(e) = cleanup::discard_failed(&records.home, adapters, record).await {
        tracing::warn!(session = %record.session_id, "cannot take back the worktree of a start cut short: {e}");
    }
    let _ = records.store.remove(&record.session_id);
    let _ = std::fs::remove_dir_all(files.dir());
}

/// The error of a start that made nothing: a full disk is named, with what to do.
pub(super) fn start_failed(home: &Home, error: Error) -> Error {
    // An adapter's error may say it only in words (git's own writes): a disk with no room
    // left is the reason then too.
    if disk::is_full(&error) || disk::looks_full(home.root()) {
        disk::full(home.root(), error.message(), "try again")
    } else {
        error
    }
}

/// Refuses a repo (or a home) whose path holds a line break: git keeps a worktree's paths
/// in files of lines (`.git/worktrees/<name>/gitdir`, the worktree's `.git`), which cannot
/// hold one. Checked before anything is made.
pub(super) fn refuse_line_breaks(home: &Home, repo: &std::path::Path) -> Result<()> {
    let breaks = |p: &std::path::Path| {
        p.as_os_str()
            .as_encoded_bytes()
            .iter()
            .any(|b| matches!(b, b'\n' | b'\r'))
    };
    let absolute = std::path::absolute(repo).unwrap_or_else(|_| repo.to_owned());
    if breaks(&absolute) {
        return Err(Error::invalid_input(format!(
            "the repository path {:?} holds a line break, which git's worktree files (one path \
             per line) cannot hold: rename or move the repository to a path without one",
            absolute
        )));
    }
    if breaks(home.root()) {
        return Err(Error::invalid_input(format!(
            "the codehands home {:?} holds a line break, which git's worktree files (one path \
             per line) cannot hold: set CODEHANDS_HOME to a path without one",
            home.root()
        )));
    }
    Ok(())
}

/// Refuses a repo that is, or is inside, a worktree under this home: a session inside
/// another session's worktree would lose its branch and worktree when the outer one is
/// rejected.
pub(super) fn refuse_codehands_worktree(records: &Records, repo: &std::path::Path) -> Result<()> {
    let worktrees = records.home.worktrees_dir();
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let (repo, worktrees) = (real(repo), real(&worktrees));
    let Ok(inside) = repo.strip_prefix(&worktrees) else {
        return Ok(());
    };
    let mut parts = inside.components();
    let (Some(key), Some(short)) = (parts.next(), parts.next()) else {
        return Ok(());
    };
    let path = worktrees.join(key).join(short);
    let owner = records.store.list().ok().and_then(|listing| {
        listing
            .records
            .into_iter()
            .find(|r| real(&r.worktree_path) == path)
    });
    let whose = owner.map_or_else(
        || "a codehands session".to_owned(),
        |r| format!("session {} ({})", r.session_id, r.state),
    );
    Err(Error::invalid_input(format!(
        "{} is a codehands worktree, of {whose}: run on the repository it was made from \
         (or on a clone of it) instead; approve or reject that session first if its change \
         should be the starting point",
        repo.display()
    )))
}
