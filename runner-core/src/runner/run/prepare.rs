//! Getting a turn ready: the agent's version, a taken-over run, the repo notes and profile, the transcript.

use crate::redact::Redactor;
use crate::runner::control::AgentRun;
use crate::runner::log;
use runner_contract::event::EventBody;
use std::time::Duration;

use super::Supervisor;

impl Supervisor {
    /// Asks the agent's program for its version in the background and records it as soon
    /// as it answers (the report says what ran from it); `None` for an agent that cannot say.
    /// It runs outside the box, as the caller: with the allowlist of the agent's environment
    /// only, in an empty folder of the run's own that the box never sees, which is also its
    /// HOME and TMPDIR when the session is boxed (`process/probe.rs`).
    pub(super) fn probe_version(&self) -> Option<tokio::task::JoinHandle<()>> {
        use runner_process::probe;
        let asked = self.agent.version_probe()?;
        let files = self.files.clone();
        let session = self.record.session_id;
        let caller = self.run.settings.caller_env.clone();
        let boxed = self.record.isolation != runner_contract::options::Isolation::None;
        let home = self.run.records.home.clone();
        Some(tokio::spawn(async move {
            let version = match probe::NeutralDir::make_in(files.dir()) {
                Ok(dir) => {
                    let env = if boxed {
                        probe::probe_env_in(caller, dir.path())
                    } else {
                        probe::probe_env(caller, &[])
                    };
                    probe::ask_cached(&home, &asked, &env, dir.path(), Duration::from_secs(10))
                        .await
                }
                Err(e) => {
                    tracing::warn!(session = %session, "cannot ask the agent's version: {e}");
                    None
                }
            };
            let probed = crate::runner::control::AgentProbed {
                program: asked.program.display().to_string(),
                version,
            };
            if let Err(e) = files.set_agent_probed(&probed) {
                tracing::warn!(session = %session, "cannot record the agent's version: {e}");
            }
        }))
    }

    /// Takes over a turn whose agent a supervisor that went away started: the log holds
    /// every event up to its last seq, and the agent's output is read again from its start.
    pub(super) fn resume_after(&mut self, run: AgentRun) {
        // What callers' answers added (`permission.resolved`) is not made again from the
        // output: it is not among the events to skip.
        let files = self.files.clone();
        let mut made_from_output = 0;
        let resolved = &mut self.resolved;
        let scan = log::scan(&files.events(), run.seq_before_agent, |body| {
            if let EventBody::PermissionResolved(r) = body {
                resolved.insert(r.request_id.clone());
            } else {
                made_from_output += 1;
            }
            matches!(body, EventBody::PermissionRequested(_))
        });
        match scan {
            Ok(scan) => {
                for event in scan.kept {
                    if let EventBody::PermissionRequested(asked) = event.body {
                        self.asked_at.insert(asked.request_id, event.ts);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(session = %self.record.session_id, "cannot read the event log: {e}")
            }
        }
        self.skip = made_from_output;
        self.met_full_disk = !self.files.has_reserve();
        self.redactor = Redactor::new(self.files.secrets());
        // The notes as the agent was given them (a parser may owe lines holding them).
        let notes = self.files.dir().join(crate::runner::notes::NOTES_FILE);
        if let Ok(Some(bytes)) = self.files.root().read(&notes) {
            self.request.notes = Some(String::from_utf8_lossy(&bytes).into_owned());
            self.request.notes_file = Some(notes);
        }
        self.profile = self
            .run
            .adapters
            .memory
            .detect_profile(&self.record.worktree_path);
        self.open_transcript(Some(run.transcript_start));
    }

    /// Reads the repo's notes and profile into the request, and opens the transcript; a
    /// memory error never fails a run: it becomes a note.
    pub(super) async fn prepare(&mut self) {
        if let Some(phase) = self.plan.phase.clone() {
            // The turn's first event says which phase it runs (`workflow/`).
            let started = EventBody::PhaseStarted(runner_contract::event::PhaseStarted {
                name: phase.name,
                kind: phase.kind,
                agent: phase.agent,
                model: phase.model,
                read_only: phase.read_only,
                round: phase.round,
            });
            self.emit_own(started, None);
            if phase.read_only {
                // What the worktree holds before the agent runs: the workflow's driver
                // compares it once the turn ends (`fingerprint.rs`).
                let (worktree, turn) = (self.record.worktree_path.clone(), self.plan.turn);
                if let Err(e) =
                    crate::runner::fingerprint::keep_before(&self.files, &worktree, turn).await
                {
                    self.note(format!("cannot keep the worktree's fingerprint: {e}"));
                }
            }
        }
        for note in self.prepare_request().await {
            self.note(note);
        }
        self.open_transcript(None);
        self.flush_events();
    }

    /// Fills what the agent is given from the repo's memory; returns the notes to tell.
    pub(super) async fn prepare_request(&mut self) -> Vec<String> {
        let mut notes_to_tell = Vec::new();
        let memory = self.run.adapters.memory.clone();
        let key = self.record.repo_key.clone();
        self.profile = memory.detect_profile(&self.record.worktree_path);
        match memory.notes_for_prompt(&key).await {
            Ok(notes) if !notes.trim().is_empty() => {
                let framed = crate::runner::notes::frame(&notes);
                match self
                    .files
                    .write_private(crate::runner::notes::NOTES_FILE, framed.as_bytes())
                {
                    Ok(path) => {
                        self.request.notes = Some(framed);
                        self.request.notes_file = Some(path);
                    }
                    Err(e) => {
                        self.forget_notes();
                        notes_to_tell.push(format!(
                            "repo memory: cannot write the notes for the agent ({e}); it runs without them"
                        ));
                    }
                }
            }
            Ok(_) => self.forget_notes(),
            Err(e) => {
                self.forget_notes();
                notes_to_tell.push(format!("repo memory: cannot read the notes: {e}"));
            }
        }
        self.request.test_command = self.profile.test_command.clone();
        self.request.provider_env = self
            .agent
            .provider_env()
            .into_iter()
            .filter_map(|name| {
                let value = self
                    .run
                    .settings
                    .caller_env
                    .iter()
                    .find(|(k, _)| *k == name)?;
                Some(value.clone())
            })
            .collect();
        notes_to_tell
    }

    /// Removes an earlier turn's notes file: a supervisor taking this turn over reads the
    /// file as the notes this turn's agent was given.
    pub(super) fn forget_notes(&self) {
        let _ = std::fs::remove_file(self.files.dir().join(crate::runner::notes::NOTES_FILE));
    }

    /// Opens the transcript for appending; when a turn is taken over, first cut it back to
    /// where the turn began, since the turn's lines are written again.
    pub(super) fn open_transcript(&mut self, cut_to: Option<u64>) {
        match self.files.open_transcript() {
            Ok(mut out) => {
                if let Some(len) = cut_to {
                    let _ = out.cut_to(len);
                }
                self.transcript = Some(out);
            }
            Err(e) => {
                self.saw(&e);
                self.note(format!("cannot open the transcript: {e}"));
            }
        }
    }

    /// Saves the repo profile when it changed; before the spawn, so that every event after
    /// the agent starts follows from its output alone.
    pub(super) async fn save_profile(&mut self) {
        let memory = self.run.adapters.memory.clone();
        let key = self.record.repo_key.clone();
        if matches!(memory.profile(&key).await, Ok(Some(saved)) if saved == self.profile) {
            return;
        }
        if let Err(e) = memory.save_profile(&key, &self.profile).await {
            self.note(format!("repo memory: cannot save the profile: {e}"));
            self.flush_events();
        }
    }
}
