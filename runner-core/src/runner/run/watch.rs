//! The read loop of a turn: the agent's output file into events, with the watchdogs.

use crate::runner::control::AgentExit;
use crate::runner::conversation::Conversation;
use crate::runner::watched::{Backoff, Watched};
use runner_contract::event::{EventBody, TaskFailed, TaskFinished};
use runner_contract::framing::{DEFAULT_MAX_LINE, JsonlDecoder};
use runner_process::tree;
use std::io::Read;
use tokio::time::Instant;

use super::frames::system_note;
use super::full_disk::cut_short;
use super::{Held, Interruption, Supervisor};

impl Supervisor {
    /// Reads the agent's output file as it grows until the agent has exited and every byte
    /// is read (or a watchdog, a stop or an auth failure ends it), then ends the turn.
    pub(super) async fn watch(&mut self, mut watched: Watched) {
        // The same request on a takeover (`resume_after`), so a replaying parser owes the
        // same lines, which the input file holds already.
        let mut parser = self.agent.parser_for(&self.request);
        let mut conversation = watched.converses().then(|| {
            Conversation::new(
                self.agent.clone(),
                self.files.clone(),
                self.plan.turn,
                self.record.permissions,
                std::mem::take(&mut self.resolved),
                std::mem::take(&mut self.asked_at),
            )
        });
        let watchdog = self.run.settings.watchdog;
        let stdout_path = self.files.agent_stdout(self.plan.turn);
        let mut stdout = match runner_contract::private::open_no_follow(
            &stdout_path,
            std::fs::OpenOptions::new().read(true),
        ) {
            Ok(file) => Some(file),
            Err(e) => {
                self.note(format!("cannot read the agent's output: {e}"));
                None
            }
        };
        let mut decoder = JsonlDecoder::with_max_line(DEFAULT_MAX_LINE);
        let mut frames = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut held: Option<Held> = None;
        let mut interruption = None;
        let mut idle_until = Instant::now() + watchdog.idle;
        let mut pause = Backoff::new();
        let mut exit: Option<Option<i32>> = None;
        // The agent's time as the supervisor sees it: from here to its exit and last byte.
        let agent_span = tracing::trace_span!("turn.agent");
        let mut first_output = Some(tracing::trace_span!("turn.first_output"));
        loop {
            if self.full.is_some() {
                interruption.get_or_insert(Interruption::DiskFull);
                break;
            }
            let n = match stdout.as_mut().map(|f| f.read(&mut chunk)) {
                Some(Ok(n)) => n,
                Some(Err(_)) | None => 0,
            };
            if n > 0 {
                drop(first_output.take());
                decoder.push(&chunk[..n], &mut frames);
                for frame in frames.drain(..) {
                    self.on_frame(
                        frame,
                        &mut *parser,
                        &mut held,
                        &mut interruption,
                        &mut watched,
                        conversation.as_mut(),
                    );
                }
                self.flush_events();
                idle_until = Instant::now() + watchdog.idle;
                pause.reset();
                if self.full.is_some() {
                    interruption.get_or_insert(Interruption::DiskFull);
                }
                if let Some(why) = self.repeats.tripped() {
                    interruption.get_or_insert(Interruption::Repeating(why.to_owned()));
                }
                // An agent that never stops printing meets its time limit here.
                if self.past_deadline() {
                    interruption.get_or_insert(Interruption::Timeout);
                }
                if interruption.is_some() {
                    break;
                }
                continue;
            }
            if let Some(code) = exit {
                // Exited, and everything it wrote before is read: the unterminated last line
                // too, unless its output could not all be written (that line is cut short).
                let mut unterminated = Vec::new();
                decoder.finish(&mut unterminated);
                if watched.output_failed() {
                    self.output_lost(&stdout_path, !unterminated.is_empty());
                } else if self.met_full_disk && !unterminated.is_empty() {
                    self.note(cut_short(&stdout_path));
                } else {
                    frames.append(&mut unterminated);
                }
                for frame in frames.drain(..) {
                    self.on_frame(
                        frame,
                        &mut *parser,
                        &mut held,
                        &mut interruption,
                        &mut watched,
                        conversation.as_mut(),
                    );
                }
                self.flush_events();
                exit = Some(code);
                break;
            }
            if let Some(code) = watched.exited() {
                // One more read: what it wrote just before exiting.
                exit = Some(code);
                continue;
            }
            if self.files.stop_requested() {
                interruption = Some(Interruption::Stop);
                break;
            }
            if let Some(conversation) = conversation.as_mut() {
                let (events, notes) = conversation.poll();
                let new = !events.is_empty() || !notes.is_empty();
                for body in events {
                    self.emit_own(body, None);
                }
                for note in notes {
                    self.emit_own(system_note(note), None);
                }
                if new {
                    self.flush_events();
                }
                if conversation.waiting() {
                    // Waiting for an answer is not idling: its own deadline ends it.
                    idle_until = Instant::now() + watchdog.idle;
                }
            }
            if self.past_deadline() {
                interruption = Some(Interruption::Timeout);
                break;
            }
            let now = Instant::now();
            if now >= idle_until {
                interruption = Some(Interruption::Idle);
                break;
            }
            if held
                .as_ref()
                .is_some_and(|h| h.linger_until.is_some_and(|t| now >= t))
            {
                interruption = Some(Interruption::Linger);
                break;
            }
            pause.wait().await;
        }
        drop(agent_span);
        let _step = tracing::trace_span!("turn.end");
        let grace = self.run.settings.stop_grace;
        if interruption.is_some() {
            watched.end_tree(grace).await;
        }
        let exit = match exit {
            Some(code) => Some(code),
            None => watched.wait_exit(watchdog.linger).await,
        };
        let exit = match exit {
            Some(code) => code,
            None => {
                interruption.get_or_insert(Interruption::Linger);
                watched.end_tree(grace).await;
                None
            }
        };
        // Children the agent left behind die with the run, and so does a relay feeding it.
        if tree::group_alive(watched.identity().pid) {
            watched.end_tree(grace).await;
        }
        watched.close_stdin();
        let exit_code = self.exit_code(&watched, exit);
        for body in parser.finish(exit_code) {
            if !body.is_terminal() {
                self.emit(body, None);
            } else if held.is_none() {
                // An agent with no result line of its own ends the run at its exit.
                held = Some(Held {
                    body,
                    raw: None,
                    linger_until: Some(Instant::now()),
                });
            }
        }
        self.flush_events();
        let stderr = self.redactor.redact_string(self.stderr_tail());
        if self.files.stop_requested() && !matches!(interruption, Some(Interruption::Stop)) {
            interruption = Some(Interruption::Stop);
        }
        let interrupted = conversation.as_ref().is_some_and(|c| c.interrupted);
        let remote = self.record.engine != runner_contract::options::Engine::Local;
        let held = held.map(|h| {
            if interrupted {
                ended_by_interrupt(h)
            } else if remote && exit_code == Some(runner_contract::REMOTE_BOX_FAILED_EXIT) {
                refused_by_the_box(h, exit_code, &stderr)
            } else {
                h
            }
        });
        self.conclude(interruption, held, exit_code, stderr).await;
    }

    /// Whether the turn's wall-clock limit has run out (`--timeout`, kept in the plan).
    fn past_deadline(&self) -> bool {
        self.plan
            .deadline_ms
            .is_some_and(|deadline| crate::runner::control::now_unix_ms() >= deadline)
    }

    /// The exit code: from our own child, else as its parent recorded it (`None` when the
    /// agent ended while no supervisor was its parent).
    pub(super) fn exit_code(&mut self, watched: &Watched, seen: Option<i32>) -> Option<i32> {
        match watched {
            Watched::Child(_) => {
                let exit = AgentExit {
                    turn: self.plan.turn,
                    code: seen,
                };
                if let Err(e) = self.files.set_exit(&exit) {
                    tracing::warn!(session = %self.record.session_id, "cannot record the agent's exit: {e}");
                    self.saw(&e);
                }
                seen
            }
            Watched::Adopted { .. } => self
                .files
                .exit()
                .filter(|e| e.turn == self.plan.turn)
                .and_then(|e| e.code),
        }
    }
}

/// A finished turn whose remote box then failed (its result refused, nothing applied): the
/// turn failed, with the box's words.
fn refused_by_the_box(held: Held, exit_code: Option<i32>, stderr: &str) -> Held {
    let EventBody::TaskFinished(finished) = &held.body else {
        return held;
    };
    let why = stderr
        .lines()
        .rev()
        .find(|l| l.contains("the remote box"))
        .unwrap_or("the remote box failed after the agent's result")
        .trim()
        .to_owned();
    Held {
        body: EventBody::TaskFailed(TaskFailed {
            reason: runner_contract::event::FailureKind::NoResult,
            message: format!("{why}: nothing of the agent's work was applied"),
            stderr: Some(stderr.to_owned()).filter(|s| !s.is_empty()),
            exit_code,
            cost_usd: finished.cost_usd,
        }),
        ..held
    }
}

/// The result of a turn the caller interrupted: whatever the agent says of it (an agent
/// may well call an interrupted turn an error), the turn ended as asked, and its change
/// awaits approval.
fn ended_by_interrupt(held: Held) -> Held {
    let finished = match held.body {
        EventBody::TaskFinished(finished) => finished,
        EventBody::TaskFailed(failed) => TaskFinished {
            cost_usd: failed.cost_usd,
            ..TaskFinished::default()
        },
        other => {
            return Held {
                body: other,
                ..held
            };
        }
    };
    Held {
        body: EventBody::TaskFinished(TaskFinished {
            interrupted: true,
            ..finished
        }),
        ..held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_turn_whose_remote_box_then_failed_is_a_failed_turn_with_the_boxs_words() {
        let held = Held {
            body: EventBody::TaskFinished(TaskFinished {
                cost_usd: Some(0.25),
                ..TaskFinished::default()
            }),
            raw: None,
            linger_until: None,
        };
        let stderr = "warming up\ncodehands: the remote box: the box's result was refused: a link leaves the tree\n";
        let failed = refused_by_the_box(held, Some(125), stderr);
        let EventBody::TaskFailed(failed) = failed.body else {
            panic!("not a failure: {:?}", failed.body);
        };
        assert_eq!(failed.reason, runner_contract::event::FailureKind::NoResult);
        assert!(
            failed.message.contains("a link leaves the tree"),
            "{}",
            failed.message
        );
        assert!(
            failed
                .message
                .contains("nothing of the agent's work was applied")
        );
        assert_eq!((failed.exit_code, failed.cost_usd), (Some(125), Some(0.25)));
        // A turn that failed already keeps its own failure.
        let own = Held {
            body: EventBody::TaskFailed(TaskFailed {
                reason: runner_contract::event::FailureKind::AuthFailed,
                message: "the key was refused".to_owned(),
                stderr: None,
                exit_code: Some(1),
                cost_usd: None,
            }),
            raw: None,
            linger_until: None,
        };
        assert!(matches!(
            refused_by_the_box(own, Some(125), stderr).body,
            EventBody::TaskFailed(TaskFailed {
                reason: runner_contract::event::FailureKind::AuthFailed,
                ..
            })
        ));
    }
}
