//! An agent crate's recordings (`tests/fixtures/<scenario>.jsonl`, one stdout line each)
//! and their snapshots (`tests/it/snapshots/it__fixtures__<scenario>.snap`, written by insta
//! from the fixture tests of the crate's one test binary, `tests/it/`).

use std::path::{Path, PathBuf};

use runner_contract::{Agent, EventBody};

/// The recordings of one agent crate.
#[derive(Debug, Clone)]
pub struct Fixtures {
    crate_dir: PathBuf,
}

impl Fixtures {
    /// The recordings of the crate at `crate_dir` (its `CARGO_MANIFEST_DIR`).
    pub fn of(crate_dir: impl Into<PathBuf>) -> Self {
        Fixtures {
            crate_dir: crate_dir.into(),
        }
    }

    /// The folder of the recordings, `tests/fixtures`.
    pub fn dir(&self) -> PathBuf {
        self.crate_dir.join("tests/fixtures")
    }

    /// The recording of `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir().join(format!("{name}.jsonl"))
    }

    /// The crate's folder.
    pub fn crate_dir(&self) -> &Path {
        &self.crate_dir
    }

    /// `path` relative to the crate's folder, for messages.
    pub fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.crate_dir)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// The snapshot of the events of `name`, as insta names it from the crate's
    /// `tests/it/fixtures.rs`.
    pub fn snapshot_path(&self, name: &str) -> PathBuf {
        self.crate_dir
            .join("tests/it/snapshots")
            .join(format!("it__fixtures__{name}.snap"))
    }

    /// The recording of `name`, whole; panics (this is for tests) when it cannot be read.
    pub fn text(&self, name: &str) -> String {
        let path = self.path(name);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("the fixture {}: {e}", path.display()))
    }

    /// The lines of the recording of `name`.
    pub fn lines(&self, name: &str) -> Vec<String> {
        self.text(name).lines().map(str::to_owned).collect()
    }

    /// The names of every recording on disk, sorted.
    pub fn names(&self) -> Vec<String> {
        let dir = self.dir();
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("the fixtures folder {}: {e}", dir.display()));
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(".jsonl").map(str::to_owned))
            .collect();
        names.sort_unstable();
        names
    }

    /// Saves `lines` as the recording of `name` (each line ends with a newline) and returns
    /// where; it is written to a temp file first, so a failed write leaves the old one.
    pub fn write(&self, name: &str, lines: &[String]) -> Result<PathBuf, String> {
        let dir = self.dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut text = lines.join("\n");
        text.push('\n');
        let target = self.path(name);
        let partial = dir.join(format!(".{name}.jsonl.partial"));
        std::fs::write(&partial, &text)
            .and_then(|()| std::fs::rename(&partial, &target))
            .map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                format!("{}: {e}", target.display())
            })?;
        Ok(target)
    }

    /// The events `agent`'s parser makes of the recording of `name`, each with the line it
    /// came from (empty for those of `finish(Some(0))`).
    pub fn replay(&self, agent: &dyn Agent, name: &str) -> Vec<(EventBody, String)> {
        parse_lines(agent, self.lines(name), Some(0))
    }

    /// Panics unless `tested` names exactly the recordings on disk: every fixture has its
    /// snapshot test, and no test names a fixture that is gone.
    pub fn assert_tested(&self, tested: &[&str]) {
        let mut tested: Vec<&str> = tested.to_vec();
        tested.sort_unstable();
        assert_eq!(
            tested,
            self.names(),
            "the snapshot tests (left) and the recordings in {} (right) differ",
            self.dir().display()
        );
    }
}

/// The events `agent`'s parser makes of `lines`, each with the line it came from, then
/// those of `finish(exit_code)` (with an empty line).
pub fn parse_lines<L: AsRef<str>>(
    agent: &dyn Agent,
    lines: impl IntoIterator<Item = L>,
    exit_code: Option<i32>,
) -> Vec<(EventBody, String)> {
    let mut parser = agent.parser();
    let mut events = Vec::new();
    for line in lines {
        let line = line.as_ref();
        for event in parser.parse_line(line) {
            events.push((event, line.to_owned()));
        }
    }
    for event in parser.finish(exit_code) {
        events.push((event, String::new()));
    }
    events
}
