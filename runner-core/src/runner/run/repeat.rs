//! The repeat guard: an agent that does the same thing over and over (the same command, the
//! same edit, or the same short cycle of them) is going nowhere, however cheap each step is.
//! It is fed every event made from the agent's output, replayed ones too, so a supervisor
//! that takes a turn over counts as the one before it did.

use std::collections::VecDeque;

use runner_contract::event::EventBody;

/// How many times in a row one action (or one cycle of up to [`MAX_CYCLE`] actions) may
/// repeat before the turn is ended as `repeating`.
pub(super) const REPEAT_LIMIT: usize = 25;

/// The longest cycle of actions the guard recognises (`edit, test, edit, test …` is 2).
const MAX_CYCLE: usize = 3;

/// The last actions of a turn, newest last.
#[derive(Debug, Default)]
pub(super) struct RepeatGuard {
    actions: VecDeque<String>,
    /// The tool call of the last command: a file it changed is part of that action.
    last_call: Option<String>,
    tripped: Option<String>,
}

impl RepeatGuard {
    /// Takes in one event of the agent's.
    pub fn see(&mut self, body: &EventBody) {
        let action = match body {
            EventBody::CommandStarted(c) => {
                self.last_call = c.tool_use_id.clone();
                format!("the command `{}`", first_line(&c.command))
            }
            EventBody::FileChanged(f) => {
                if f.tool_use_id.is_some() && f.tool_use_id == self.last_call {
                    return;
                }
                format!("an edit of {} ({})", f.path, f.tool)
            }
            _ => return,
        };
        self.actions.push_back(action);
        if self.actions.len() > REPEAT_LIMIT * MAX_CYCLE {
            self.actions.pop_front();
        }
        if self.tripped.is_none() {
            self.tripped = self.cycle();
        }
    }

    /// Why the agent is going in circles, once it is.
    pub fn tripped(&self) -> Option<&str> {
        self.tripped.as_deref()
    }

    fn cycle(&self) -> Option<String> {
        let actions: Vec<&String> = self.actions.iter().collect();
        (1..=MAX_CYCLE).find_map(|period| {
            let window = period * REPEAT_LIMIT;
            if actions.len() < window {
                return None;
            }
            let tail = &actions[actions.len() - window..];
            let repeats = tail.iter().enumerate().all(|(i, a)| *a == tail[i % period]);
            let distinct = period == 1 || tail[..period].iter().any(|a| *a != tail[0]);
            (repeats && distinct).then(|| {
                let what: Vec<&str> = tail[..period].iter().map(|a| a.as_str()).collect();
                format!(
                    "the agent repeated itself: {} {REPEAT_LIMIT} times in a row; the repeat \
                     guard ended its process tree, and its change is kept for inspection",
                    what.join(", then ")
                )
            })
        })
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut cut: String = line.chars().take(120).collect();
    if cut.len() < line.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::event::{CommandStarted, FileChanged};

    fn command(cmd: &str, id: &str) -> EventBody {
        EventBody::CommandStarted(CommandStarted {
            command: cmd.into(),
            tool_use_id: Some(id.into()),
        })
    }

    fn edit(path: &str, id: &str) -> EventBody {
        EventBody::FileChanged(FileChanged {
            path: path.into(),
            tool: "Edit".into(),
            change: None,
            tool_use_id: Some(id.into()),
        })
    }

    #[test]
    fn the_same_command_trips_the_guard_at_the_limit_and_not_before() {
        let mut guard = RepeatGuard::default();
        for i in 0..REPEAT_LIMIT - 1 {
            guard.see(&command("npm test", &format!("c{i}")));
        }
        assert!(guard.tripped().is_none());
        guard.see(&command("npm test", "last"));
        assert!(guard.tripped().unwrap().contains("`npm test` 25 times"));
    }

    #[test]
    fn a_cycle_of_edit_and_test_trips_it_and_progress_does_not() {
        let mut guard = RepeatGuard::default();
        for i in 0..REPEAT_LIMIT {
            guard.see(&edit("src/a.js", &format!("e{i}")));
            guard.see(&command("node test.js", &format!("t{i}")));
        }
        let why = guard.tripped().unwrap();
        assert!(
            why.contains("src/a.js") && why.contains("node test.js"),
            "{why}"
        );

        let mut working = RepeatGuard::default();
        for i in 0..REPEAT_LIMIT * 3 {
            working.see(&edit(&format!("src/{i}.js"), &format!("e{i}")));
            working.see(&command("npm test", &format!("t{i}")));
        }
        assert!(working.tripped().is_none(), "{:?}", working.tripped());
    }

    #[test]
    fn a_file_a_command_changed_is_part_of_that_command() {
        let mut guard = RepeatGuard::default();
        for i in 0..REPEAT_LIMIT {
            let id = format!("c{i}");
            guard.see(&command("apply_patch <<'PATCH'\n…", &id));
            guard.see(&edit("src/a.js", &id));
        }
        assert!(guard.tripped().unwrap().contains("apply_patch"));
    }
}
