//! The task store: `$CODEHANDS_HOME/tasks/<taskId>.json`, written and read as the session
//! store writes and reads its records (`crate::store`): atomically (temp file, fsync, rename),
//! strictly (unknown fields and states are errors), privately (0600 in 0700 folders, no link
//! followed), and only a parsed [`TaskId`] becomes a path. The lock of a task's pick and
//! reject is `tasks/<taskId>.lock`, held with `flock`, so a process that dies lets go of it.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;

use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::private::{PrivateRoot, read_keyed_record};
use runner_contract::task::{TaskId, TaskRecord, TaskState};

/// Where task records live.
#[derive(Debug)]
pub(crate) struct TaskStore {
    root: PrivateRoot,
    dir: PathBuf,
    /// Serialises read-modify-write within this process; across processes the task lock
    /// serialises picks and rejects, and the atomic rename keeps every record whole.
    lock: Mutex<()>,
}

/// What [`TaskStore::list`] found: readable records, oldest first, and files that could not
/// be read, with why.
#[derive(Debug, Default)]
pub(crate) struct TaskListing {
    pub records: Vec<TaskRecord>,
    pub unreadable: Vec<(PathBuf, Error)>,
}

impl TaskStore {
    /// The store of a codehands home.
    pub fn in_home(home: &Home) -> Self {
        Self {
            root: home.private(),
            dir: home.tasks_dir(),
            lock: Mutex::new(()),
        }
    }

    /// Saves a new record; refuses an id that is taken.
    pub fn create(&self, record: &TaskRecord) -> Result<()> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.read(&record.task_id)?.is_some() {
            return Err(Error::invalid_input(format!(
                "task {} already exists: pick a new task id",
                record.task_id
            )));
        }
        self.write(record)
    }

    /// The record of `id`.
    pub fn get(&self, id: &TaskId) -> Result<TaskRecord> {
        self.read(id)?.ok_or_else(|| {
            Error::not_found(format!(
                "no task {id}: `codehands run --attempts` starts one and prints its id"
            ))
        })
    }

    /// Changes a record with `change` and saves it; a state change is checked against the
    /// task table, and the stored record is untouched on error.
    pub fn update(
        &self,
        id: &TaskId,
        change: impl FnOnce(&mut TaskRecord) -> Result<()>,
    ) -> Result<TaskRecord> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let before = self.get(id)?;
        let mut after = before.clone();
        change(&mut after)?;
        if after.task_id != before.task_id {
            return Err(Error::internal("a task record's id cannot change"));
        }
        if after.state != before.state && !before.state.can_move_to(after.state) {
            return Err(Error::new(
                ErrorKind::IllegalMove,
                format!(
                    "task {id} cannot move from {} to {}",
                    before.state, after.state
                ),
            ));
        }
        after.updated_at = runner_contract::now_rfc3339();
        self.write(&after)?;
        Ok(after)
    }

    /// Moves a task to `to`, checked; `what` names the action for the error.
    pub fn move_to(&self, id: &TaskId, to: TaskState, what: &str) -> Result<TaskRecord> {
        self.update(id, |r| r.move_to(to, what))
    }

    /// Removes a record (a task whose attempts could not all start). Missing is fine.
    pub fn remove(&self, id: &TaskId) -> Result<()> {
        match std::fs::remove_file(self.path(id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(
                format!("cannot remove the record of task {id}"),
                &e,
            )),
            _ => Ok(()),
        }
    }

    /// Every record, oldest first, and the files that could not be read.
    pub fn list(&self) -> Result<TaskListing> {
        let mut listing = TaskListing::default();
        if std::fs::symlink_metadata(&self.dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::invalid_input(format!(
                "{} is a symbolic link, which codehands never follows under its home: remove \
                 the link",
                self.dir.display()
            )));
        }
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
            Err(e) => {
                return Err(Error::io(format!("cannot read {}", self.dir.display()), &e));
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            // Temp files of interrupted writes start with a dot; locks end in `.lock`.
            let Some(stem) = name
                .strip_suffix(".json")
                .filter(|_| !name.starts_with('.'))
            else {
                continue;
            };
            let read = TaskId::parse(stem).and_then(|id| {
                read_keyed_record(&path, "task", &id, |r: &TaskRecord| &r.task_id)?
                    .ok_or_else(|| Error::not_found(format!("{} is gone", path.display())))
            });
            match read {
                Ok(record) => listing.records.push(record),
                Err(e) => listing.unreadable.push((path, e)),
            }
        }
        listing.records.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.task_id.cmp(&b.task_id))
        });
        Ok(listing)
    }

    /// The task `text` names: a whole id, or a prefix of 8+ characters that exactly one
    /// stored task's id starts with. `Ok(None)` when no task's id starts with it (the
    /// caller may try sessions next).
    pub fn find(&self, text: &str) -> Result<Option<TaskId>> {
        if let Ok(id) = TaskId::parse(text) {
            return Ok(self.read(&id)?.map(|_| id));
        }
        let prefix = SessionId::check_prefix(text)?;
        let listing = self.list()?;
        let unreadable = listing
            .unreadable
            .iter()
            .filter_map(|(path, _)| TaskId::parse(path.file_stem()?.to_str()?).ok());
        let mut matches: Vec<TaskId> = listing
            .records
            .iter()
            .map(|r| r.task_id)
            .chain(unreadable)
            .filter(|id| id.to_string().starts_with(&prefix))
            .collect();
        matches.sort();
        matches.dedup();
        match matches.as_slice() {
            [] => Ok(None),
            [id] => Ok(Some(*id)),
            many => Err(Error::invalid_input(format!(
                "{prefix} is the start of {} task ids ({}): give more of the id",
                many.len(),
                many.iter()
                    .map(TaskId::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The task session `id` is an attempt of, if any. A task record that cannot be read is
    /// an error: it may be the one, and a pick must not pass for a plain approve.
    pub fn of_session(&self, id: &SessionId) -> Result<Option<TaskRecord>> {
        let listing = self.list()?;
        if let Some((_, e)) = listing.unreadable.into_iter().next() {
            return Err(e);
        }
        Ok(listing
            .records
            .into_iter()
            .find(|r| r.attempt_of(id).is_some()))
    }

    /// Takes the lock of task `id`'s pick and reject, waiting for it.
    pub async fn lock(&self, id: &TaskId) -> Result<TaskLock> {
        self.root.ensure_dir(&self.dir)?;
        let path = self.dir.join(format!("{id}.lock"));
        tokio::task::spawn_blocking(move || {
            let file = runner_contract::private::open_lock_file(&path)
                .and_then(|file| file.lock().map(|()| file))
                .map_err(|e| {
                    Error::io(format!("cannot take the task lock {}", path.display()), &e)
                })?;
            Ok(TaskLock { _file: file })
        })
        .await
        .map_err(|e| Error::internal(format!("the lock task panicked: {e}")))?
    }

    /// The lock of task `id` if nobody holds it now (`recover` leaves a pick under way alone).
    pub fn try_lock(&self, id: &TaskId) -> Result<Option<TaskLock>> {
        self.root.ensure_dir(&self.dir)?;
        let path = self.dir.join(format!("{id}.lock"));
        let file = runner_contract::private::open_lock_file(&path)
            .map_err(|e| Error::io(format!("cannot open the task lock {}", path.display()), &e))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(TaskLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(
                format!("cannot take the task lock {}", path.display()),
                &e,
            )),
        }
    }

    fn path(&self, id: &TaskId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn read(&self, id: &TaskId) -> Result<Option<TaskRecord>> {
        read_keyed_record(&self.path(id), "task", id, |r: &TaskRecord| &r.task_id)
    }

    fn write(&self, record: &TaskRecord) -> Result<()> {
        let json = serde_json::to_vec_pretty(record)
            .map_err(|e| Error::internal(format!("cannot encode a task record: {e}")))?;
        self.root
            .write_atomically(&self.path(&record.task_id), &json)
    }
}

/// The held lock of one task (released when dropped, or when the process dies).
pub(crate) struct TaskLock {
    _file: File,
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::agent_name::AgentName;
    use runner_contract::task::TaskAttempt;

    fn record(id: TaskId) -> TaskRecord {
        TaskRecord {
            task_id: id,
            state: TaskState::Open,
            repo_path: "/repo".into(),
            base_commit: "0".repeat(40),
            prompt: "fix it".into(),
            attempts: vec![TaskAttempt {
                agent: AgentName::parse("fake").unwrap(),
                model: None,
                session_id: SessionId::new_random(),
                verdict: None,
            }],
            budget_usd: None,
            picked: None,
            keep_others: false,
            created_at: runner_contract::now_rfc3339(),
            updated_at: runner_contract::now_rfc3339(),
        }
    }

    #[test]
    fn records_round_trip_and_moves_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::in_home(&Home::new(dir.path()));
        let id = TaskId::new_random();
        store.create(&record(id)).unwrap();
        assert!(store.create(&record(id)).is_err(), "an id is taken once");
        let session = store.get(&id).unwrap().attempts[0].session_id;
        assert_eq!(store.of_session(&session).unwrap().unwrap().task_id, id);
        assert_eq!(store.find(&id.short()).unwrap(), Some(id));
        let moved = store.move_to(&id, TaskState::Rejecting, "reject").unwrap();
        assert_eq!(moved.state, TaskState::Rejecting);
        let refused = store.move_to(&id, TaskState::Open, "reopen").unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::IllegalMove);
        assert_eq!(store.get(&id).unwrap().state, TaskState::Rejecting);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(store.path(&id)).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn reads_are_strict() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::in_home(&Home::new(dir.path()));
        let id = TaskId::new_random();
        store.create(&record(id)).unwrap();
        let path = store.path(&id);
        let mut value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        value["surprise"] = true.into();
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        assert_eq!(store.get(&id).unwrap_err().kind(), ErrorKind::CorruptRecord);
        value.as_object_mut().unwrap().remove("surprise");
        value["state"] = "half-picked".into();
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        assert_eq!(store.get(&id).unwrap_err().kind(), ErrorKind::CorruptRecord);
        // Another task's record under this id's name is refused too.
        value["state"] = "open".into();
        value["taskId"] = TaskId::new_random().to_string().into();
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        assert_eq!(store.get(&id).unwrap_err().kind(), ErrorKind::CorruptRecord);
        assert_eq!(store.list().unwrap().unreadable.len(), 1);
    }
}
