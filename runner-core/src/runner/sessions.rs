//! Looking at sessions: resolving an id, the listing (healing runs nobody supervises), the
//! logged events, waiting for an agent, and supervising a turn here.

use std::time::Duration;

use tokio::time::Instant;

use super::control::RunFiles;
use super::parts::LocalRunner;
use super::{disk, heal, log, run};
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::event::Event;
use runner_contract::ids::SessionId;
use runner_contract::session::{SessionRecord, SessionState};

impl LocalRunner {
    /// The session `text` names: a whole id, or a unique prefix of 8 or more characters
    /// (see [`SessionStore::resolve`]); an ambiguous prefix is refused, listing the matches.
    pub(crate) fn resolve_id(&self, text: &str) -> Result<SessionId> {
        self.records().store.resolve(text)
    }

    /// The session records, and the files that could not be read (with why): record files,
    /// and the event logs of running sessions. A running session nobody supervises is healed
    /// first, so none is listed running dead; one that cannot be healed now (its log cannot
    /// be read, its disk is full) is listed as it is, and never keeps the others from the list.
    pub async fn listing(&self) -> Result<crate::store::Listing> {
        let listing = self.records().store.list()?;
        let mut healed = false;
        let mut unhealed = Vec::new();
        for record in &listing.records {
            if matches!(record.state, SessionState::Running | SessionState::Queued) {
                match heal::heal(self.launcher(), record).await {
                    Ok(done) => {
                        healed |= !matches!(done, heal::Healed::Nothing | heal::Healed::Adopted)
                    }
                    Err(e) => unhealed.push((record.session_id, e)),
                }
            }
        }
        let mut listing = if healed {
            self.records().store.list()?
        } else {
            listing
        };
        for (id, e) in unhealed {
            if e.kind() == ErrorKind::CorruptRecord {
                let log = RunFiles::in_home(&self.records().home, &id).events();
                listing.unreadable.push((log, e));
            } else {
                tracing::warn!(session = %id, "cannot take over the run now: {e}");
            }
        }
        Ok(listing)
    }

    /// Supervises session `id`'s current turn here until it ends (what the `codehands`
    /// binary's `__supervise` does); returns at once when another supervisor has it.
    pub async fn supervise(&self, id: &SessionId) -> Result<()> {
        let planned = RunFiles::in_home(&self.records().home, id).turn().is_some();
        run::supervise(self.supervision().clone(), *id).await?;
        if planned {
            return Ok(());
        }
        // Launched with no turn to run: to go on with a stalled workflow (`workflow/stall.rs`).
        self.drive_if_stalled(id).await
    }

    /// The events of session `id` after seq `after` that its log holds now (no following).
    pub fn logged_events(&self, id: &SessionId, after: u64) -> Result<Vec<Event>> {
        self.records().store.get(id)?;
        let files = RunFiles::in_home(&self.records().home, id);
        Ok(log::read_all(&files.events())?
            .into_iter()
            .filter(|e| e.seq > after)
            .collect())
    }

    /// After a stream of session `id`'s events ended: `Ok` when the session is no longer
    /// running (the stream ended as it should), else why it could not be followed to its end
    /// (its log cannot be read, or its run cannot go on now: a disk that stays full).
    pub async fn after_stream(&self, id: &SessionId) -> Result<()> {
        let record = self.healed(self.records().store.get(id)?).await?;
        if !matches!(record.state, SessionState::Running | SessionState::Queued) {
            return Ok(());
        }
        let files = RunFiles::in_home(&self.records().home, id);
        log::scan(&files.events(), u64::MAX, |_| false)?;
        if disk::looks_full(files.dir()) {
            return Err(disk::full(
                self.records().home.root(),
                "",
                "run `codehands recover`",
            ));
        }
        Err(Error::new(
            ErrorKind::Io,
            format!(
                "the events of session {id} ended before its turn did: \
                 `codehands events {id} --follow` follows it again"
            ),
        ))
    }

    /// Waits until the agent of session `id`'s current turn has been spawned (or the turn has
    /// ended), at most `limit`; returns the record then.
    pub async fn wait_for_agent(&self, id: &SessionId, limit: Duration) -> Result<SessionRecord> {
        let files = RunFiles::in_home(&self.records().home, id);
        let deadline = Instant::now() + limit;
        loop {
            let record = self.records().store.get(id)?;
            let spawned = files.agent_run().is_some_and(|run| {
                run.process.is_some() && files.turn().is_some_and(|t| t.turn == run.turn)
            });
            if spawned || record.state != SessionState::Running || Instant::now() >= deadline {
                return Ok(record);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Heals `record` when it says running but nobody supervises it; returns it as it is then.
    pub(super) async fn healed(&self, record: SessionRecord) -> Result<SessionRecord> {
        match heal::heal(self.launcher(), &record).await? {
            heal::Healed::Nothing | heal::Healed::Adopted => Ok(record),
            heal::Healed::Finished | heal::Healed::Failed => {
                self.records().store.get(&record.session_id)
            }
        }
    }
}
