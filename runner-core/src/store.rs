//! The session store: `$CODEHANDS_HOME/sessions/<sessionId>.json`, or memory only.
//!
//! Writes are atomic (a temp file in the same folder, fsync, rename, fsync of the
//! folder), so a crash leaves either the old record or the new one, never half of
//! one. Reading is strict: unknown fields, unknown states and wrong types are
//! errors, never defaults. Records are private (0600 in 0700 folders) and never read
//! or written through a symbolic link ([`crate::private`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use runner_contract::error::{Error, Result};
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::private::{PrivateRoot, read_keyed_record};
use runner_contract::session::{SessionRecord, SessionState};

/// Where session records live.
#[derive(Debug)]
pub struct SessionStore {
    backend: Backend,
    /// Serialises read-modify-write within this process; across processes the
    /// atomic rename keeps every record whole.
    lock: Mutex<()>,
}

#[derive(Debug)]
enum Backend {
    Memory(Mutex<BTreeMap<SessionId, SessionRecord>>),
    Files { root: PrivateRoot, dir: PathBuf },
}

/// What [`SessionStore::list`] found: readable records, and files that could not be read.
#[derive(Debug, Default)]
pub struct Listing {
    /// The records, oldest first.
    pub records: Vec<SessionRecord>,
    /// Files that are not valid records, with why.
    pub unreadable: Vec<(PathBuf, Error)>,
}

impl SessionStore {
    /// A store that keeps records in memory only (the fake runner, tests).
    pub fn in_memory() -> Self {
        Self {
            backend: Backend::Memory(Mutex::default()),
            lock: Mutex::new(()),
        }
    }

    /// A store that keeps one JSON file per session in `dir`, a private folder of its
    /// own. The folder is made on the first write.
    pub fn on_disk(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Self {
            backend: Backend::Files {
                root: PrivateRoot::new(&dir),
                dir,
            },
            lock: Mutex::new(()),
        }
    }

    /// The store of a codehands home, `$CODEHANDS_HOME/sessions`: the home and the folder
    /// are made private on the first write.
    pub fn in_home(home: &Home) -> Self {
        Self {
            backend: Backend::Files {
                root: home.private(),
                dir: home.sessions_dir(),
            },
            lock: Mutex::new(()),
        }
    }

    /// The folder of an on-disk store.
    pub fn dir(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Files { dir, .. } => Some(dir),
            Backend::Memory(_) => None,
        }
    }

    /// Saves a new record; refuses an id that is already taken.
    pub fn create(&self, record: &SessionRecord) -> Result<()> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.read(&record.session_id)?.is_some() {
            return Err(Error::invalid_input(format!(
                "session {} already exists: pick a new session id",
                record.session_id
            )));
        }
        self.write(record)
    }

    /// The record of `id`.
    pub fn get(&self, id: &SessionId) -> Result<SessionRecord> {
        self.read(id)?.ok_or_else(|| {
            Error::not_found(format!(
                "no session {id}: `codehands sessions` lists the sessions there are"
            ))
        })
    }

    /// Changes a record with `change` and saves it. A state change made by `change`
    /// is checked against the state table; the stored record is untouched on error.
    pub fn update<T>(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut SessionRecord) -> Result<T>,
    ) -> Result<(T, SessionRecord)> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let before = self.get(id)?;
        let mut after = before.clone();
        let out = change(&mut after)?;
        if after.session_id != before.session_id {
            return Err(Error::internal("a session record's id cannot change"));
        }
        if after.state != before.state && !before.state.can_move_to(after.state) {
            return Err(Error::illegal_move(
                before.state,
                after.state,
                "change the session",
            ));
        }
        after.updated_at = runner_contract::now_rfc3339();
        self.write(&after)?;
        Ok((out, after))
    }

    /// Moves a session to `to`, checked against the table; `what` names the action for the error.
    pub fn move_to(&self, id: &SessionId, to: SessionState, what: &str) -> Result<SessionRecord> {
        self.update(id, |r| r.move_to(to, what)).map(|((), r)| r)
    }

    /// Removes a record (a session that never really started). Missing is fine.
    pub fn remove(&self, id: &SessionId) -> Result<()> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        match &self.backend {
            Backend::Memory(map) => {
                map.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
                Ok(())
            }
            Backend::Files { dir, .. } => match fs::remove_file(record_path(dir, id)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(
                    format!("cannot remove the record of session {id}"),
                    &e,
                )),
                _ => Ok(()),
            },
        }
    }

    /// Removes the temp files of writes cut short (`.tmp-*.partial`) older than `age`: a
    /// younger one may be another process's write under way.
    pub fn remove_stale_temp_files(&self, age: std::time::Duration) {
        let Backend::Files { dir, .. } = &self.backend else {
            return;
        };
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with(".tmp-") && name.ends_with(".partial")) {
                continue;
            }
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|elapsed| elapsed > age);
            if old {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Every record, oldest first, and the files that could not be read.
    pub fn list(&self) -> Result<Listing> {
        let mut listing = Listing::default();
        match &self.backend {
            Backend::Memory(map) => {
                listing.records = map
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .cloned()
                    .collect();
            }
            Backend::Files { dir, .. } => {
                match fs::symlink_metadata(dir) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        return Err(Error::invalid_input(format!(
                            "{} is a symbolic link, which codehands never follows under its \
                             home: remove the link",
                            dir.display()
                        )));
                    }
                    _ => {}
                }
                let entries = match fs::read_dir(dir) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
                    Err(e) => return Err(Error::io(format!("cannot read {}", dir.display()), &e)),
                };
                for entry in entries {
                    let path = entry
                        .map_err(|e| Error::io(format!("cannot read {}", dir.display()), &e))?
                        .path();
                    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                        continue;
                    };
                    // Temp files of interrupted writes start with a dot; they are not records.
                    let Some(stem) = name
                        .strip_suffix(".json")
                        .filter(|_| !name.starts_with('.'))
                    else {
                        continue;
                    };
                    let read = SessionId::parse(stem).and_then(|id| parse_record_file(&path, &id));
                    match read {
                        Ok(record) => listing.records.push(record),
                        Err(e) => listing.unreadable.push((path, e)),
                    }
                }
            }
        }
        listing.records.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.session_id.cmp(&b.session_id))
        });
        Ok(listing)
    }

    /// The session `text` names: a whole id, or a prefix of at least
    /// [`SessionId::MIN_PREFIX`] characters that exactly one stored session's id starts with
    /// (as git takes a commit's prefix). Records that cannot be read count too, by their
    /// file name, so a prefix never silently means a different session.
    pub fn resolve(&self, text: &str) -> Result<SessionId> {
        if let Ok(id) = SessionId::parse(text) {
            return Ok(id);
        }
        let prefix = SessionId::check_prefix(text)?;
        let listing = self.list()?;
        let unreadable = listing.unreadable.iter().filter_map(|(path, _)| {
            let stem = path.file_stem()?.to_str()?;
            SessionId::parse(stem).ok()
        });
        let mut matches: Vec<SessionId> = listing
            .records
            .iter()
            .map(|r| r.session_id)
            .chain(unreadable)
            .filter(|id| id.to_string().starts_with(&prefix))
            .collect();
        matches.sort();
        matches.dedup();
        match matches.as_slice() {
            [id] => Ok(*id),
            [] => Err(Error::not_found(format!(
                "no session id starts with {prefix}: `codehands sessions` lists them"
            ))),
            many => Err(Error::invalid_input(format!(
                "{prefix} is the start of {} session ids ({}): give more of the id",
                many.len(),
                many.iter()
                    .map(SessionId::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    fn read(&self, id: &SessionId) -> Result<Option<SessionRecord>> {
        match &self.backend {
            Backend::Memory(map) => Ok(map
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
                .cloned()),
            Backend::Files { dir, .. } => {
                read_keyed_record(&record_path(dir, id), "session", id, |r: &SessionRecord| {
                    &r.session_id
                })
            }
        }
    }

    fn write(&self, record: &SessionRecord) -> Result<()> {
        match &self.backend {
            Backend::Memory(map) => {
                map.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(record.session_id, record.clone());
                Ok(())
            }
            Backend::Files { root, dir } => {
                let json = serde_json::to_vec_pretty(record)
                    .map_err(|e| Error::internal(format!("cannot encode a session record: {e}")))?;
                root.write_atomically(&record_path(dir, &record.session_id), &json)
            }
        }
    }
}

/// The file of a session's record. Only a parsed [`SessionId`] ever becomes a path.
fn record_path(dir: &Path, id: &SessionId) -> PathBuf {
    dir.join(format!("{id}.json"))
}

fn parse_record_file(path: &Path, id: &SessionId) -> Result<SessionRecord> {
    read_keyed_record(path, "session", id, |r: &SessionRecord| &r.session_id)?
        .ok_or_else(|| Error::not_found(format!("{} is gone", path.display())))
}
