//! How long each phase of a remote turn took, as the shim saw it: `runs/<id>/remote-phases.json`,
//! read by `codehands report` and `cargo xtask bench scale` (README.md, "Where runs run").

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The phases of one remote turn, in milliseconds each (a phase the engine did not go through,
/// or that the shim did not see, is absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Phases {
    /// `docker` or `swarm`.
    pub engine: String,
    /// The box these are of (the plan's id): a turn's phases are not another's.
    #[serde(default)]
    pub box_id: String,
    /// Whether the turn took a warm box (started ahead, docs/remote-box.md "Warm boxes"):
    /// then `create` is the hand-in, and `schedule` and `start` are nil.
    #[serde(default)]
    pub warm: bool,
    /// From the shim's start to the engine holding the box: the inputs packed and sent, the
    /// service (or container) made.
    pub create_ms: Option<u64>,
    /// Until a node took the task (a swarm's scheduler).
    pub schedule_ms: Option<u64>,
    /// Until the box ran: the image pulled when the node lacked it, the container started.
    pub start_ms: Option<u64>,
    /// Until the agent's first output reached the shim.
    pub first_output_ms: Option<u64>,
    /// Until the agent ended (its result's last line, or the container's exit).
    pub agent_ms: Option<u64>,
    /// Until the result was back and applied to the worktree.
    pub result_ms: Option<u64>,
    /// Removing what the engine held for the box (after the turn's end: a process of its
    /// own does it, so the run does not wait for it).
    pub cleanup_ms: Option<u64>,
    /// The shim's whole life.
    pub total_ms: Option<u64>,
}

/// The phases' names as the report prints them, in order, with their field.
pub const NAMES: [&str; 7] = [
    "create",
    "schedule",
    "start",
    "firstOutput",
    "agent",
    "resultBack",
    "cleanup",
];

impl Phases {
    /// Where the phases of `run_dir`'s last remote turn are.
    pub fn file_in(run_dir: &Path) -> PathBuf {
        run_dir.join(runner_contract::run_folder::REMOTE_PHASES)
    }

    /// The phases kept in `run_dir`, when its last turn ran remotely.
    pub fn read(run_dir: &Path) -> Option<Self> {
        let bytes = runner_contract::private::read_no_follow(&Self::file_in(run_dir)).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes them into `run_dir`; a failure is ignored: the phases are for reading, never
    /// for the run.
    pub(crate) fn write(&self, run_dir: &Path) {
        if let Ok(bytes) = serde_json::to_vec_pretty(self) {
            let _ = runner_contract::private::PrivateRoot::new(run_dir)
                .replace_file(&Self::file_in(run_dir), &bytes);
        }
    }

    /// Each phase by [`NAMES`], in order.
    pub fn values(&self) -> [Option<u64>; 7] {
        [
            self.create_ms,
            self.schedule_ms,
            self.start_ms,
            self.first_output_ms,
            self.agent_ms,
            self.result_ms,
            self.cleanup_ms,
        ]
    }

    /// One line for people: `remote box (swarm): create 120 ms, schedule 40 ms, …`.
    pub fn render(&self) -> String {
        let parts: Vec<String> = NAMES
            .iter()
            .zip(self.values())
            .filter_map(|(name, ms)| ms.map(|ms| format!("{name} {ms} ms")))
            .collect();
        let total = self
            .total_ms
            .map(|ms| format!(" (total {ms} ms)"))
            .unwrap_or_default();
        let warm = if self.warm { ", a warm box" } else { "" };
        format!(
            "remote box ({}{warm}): {}{total}",
            self.engine,
            parts.join(", ")
        )
    }
}

/// The phases' indices, for [`Clock::mark`].
pub(crate) const CREATE: usize = 0;
pub(crate) const SCHEDULE: usize = 1;
pub(crate) const START: usize = 2;
pub(crate) const FIRST_OUTPUT: usize = 3;
pub(crate) const AGENT: usize = 4;
pub(crate) const RESULT: usize = 5;
pub(crate) const CLEANUP: usize = 6;

/// Marks the end of each phase as it passes.
pub(crate) struct Clock {
    engine: String,
    box_id: String,
    started: Instant,
    marks: [Option<Instant>; 7],
    warm: bool,
}

impl Clock {
    /// A clock started now, for a box on `engine`.
    pub(crate) fn start(engine: &str, box_id: &str) -> Self {
        Self {
            engine: engine.to_owned(),
            box_id: box_id.to_owned(),
            started: Instant::now(),
            marks: [None; 7],
            warm: false,
        }
    }

    /// The turn took the warm box `box_id`: the phases are that box's.
    pub(crate) fn warm(&mut self, box_id: &str) {
        self.box_id = box_id.to_owned();
        self.warm = true;
    }

    /// Phase `phase` ended now (once: a later mark of it is ignored).
    pub(crate) fn mark(&mut self, phase: usize) {
        self.mark_at(phase, Instant::now());
    }

    /// Phase `phase` ended at `at`; the scheduling and start, when not seen, end there too (a
    /// box that printed has started, whatever the last poll of its task said).
    pub(crate) fn mark_at(&mut self, phase: usize, at: Instant) {
        for earlier in SCHEDULE..phase.min(FIRST_OUTPUT) {
            if self.marks[earlier].is_none_or(|t| t > at) {
                self.marks[earlier] = Some(at);
            }
        }
        self.marks[phase].get_or_insert(at);
    }

    /// Whether `phase` has been marked.
    pub(crate) fn marked(&self, phase: usize) -> bool {
        self.marks[phase].is_some()
    }

    /// The phases so far: each from the end of the one before it that was seen.
    pub(crate) fn phases(&self) -> Phases {
        let mut ms = [None; 7];
        let mut previous = self.started;
        for (i, mark) in self.marks.iter().enumerate() {
            if let Some(at) = mark {
                ms[i] = Some(at.saturating_duration_since(previous).as_millis() as u64);
                previous = previous.max(*at);
            }
        }
        Phases {
            engine: self.engine.clone(),
            box_id: self.box_id.clone(),
            warm: self.warm,
            create_ms: ms[CREATE],
            schedule_ms: ms[SCHEDULE],
            start_ms: ms[START],
            first_output_ms: ms[FIRST_OUTPUT],
            agent_ms: ms[AGENT],
            result_ms: ms[RESULT],
            cleanup_ms: ms[CLEANUP],
            total_ms: Some(self.started.elapsed().as_millis() as u64),
        }
    }

    /// Writes the phases into `run_dir` (beside the plan).
    pub(crate) fn save(&self, run_dir: Option<&Path>) {
        if let Some(dir) = run_dir {
            self.phases().write(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_not_seen_ends_with_the_next_one_seen() {
        let mut clock = Clock::start("swarm", "b1");
        clock.mark(CREATE);
        clock.mark(FIRST_OUTPUT);
        clock.mark(CLEANUP);
        let phases = clock.phases();
        assert!(phases.create_ms.is_some() && phases.first_output_ms.is_some());
        assert_eq!(
            phases.schedule_ms,
            Some(0),
            "scheduled when it printed at the latest"
        );
        assert_eq!(phases.agent_ms, None);
        assert!(phases.total_ms >= phases.cleanup_ms);
    }

    #[test]
    fn phases_render_in_order_and_skip_what_was_not_seen() {
        let phases = Phases {
            engine: "swarm".into(),
            create_ms: Some(120),
            start_ms: Some(700),
            cleanup_ms: Some(30),
            total_ms: Some(900),
            ..Phases::default()
        };
        assert_eq!(
            phases.render(),
            "remote box (swarm): create 120 ms, start 700 ms, cleanup 30 ms (total 900 ms)"
        );
    }
}
