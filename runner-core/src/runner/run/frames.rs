//! One output line of the agent into events: parsing, redaction, the events' paths, the log.

use crate::runner::conversation::Conversation;
use crate::runner::disk;
use crate::runner::watched::Watched;
use runner_contract::event::{EventBody, Message, MessageRole, ProviderState};
use runner_contract::framing::Frame;
use runner_contract::traits::agent::AgentParser;
use std::io::Read;
use tokio::time::Instant;

use super::{Held, Interruption, Supervisor};

impl Supervisor {
    /// One framed output line: redacted, kept in the transcript, parsed into events.
    pub(super) fn on_frame(
        &mut self,
        frame: Frame,
        parser: &mut dyn AgentParser,
        held: &mut Option<Held>,
        interruption: &mut Option<Interruption>,
        watched: &mut Watched,
        mut conversation: Option<&mut Conversation>,
    ) {
        let text = match frame {
            Frame::Line(text) | Frame::NotUtf8(text) => strip_cr(text),
            Frame::TooLong { bytes } => {
                self.note(format!(
                    "the agent printed a line of {bytes} bytes, over the limit; it was skipped"
                ));
                return;
            }
        };
        if text.is_empty() {
            return;
        }
        // The agent may print its own key (a test script dumping its environment), escaped,
        // encoded or cut short: cut here, before the line is decoded, it never reaches the
        // transcript, an event's payload or its raw line.
        let text = self.redactor.redact_string(text);
        if let Some(out) = &mut self.transcript {
            let mut line = Vec::with_capacity(text.len() + 1);
            line.extend_from_slice(text.as_bytes());
            line.push(b'\n');
            if let Err(e) = out.append(&line) {
                self.transcript = None;
                self.saw(&e);
            }
        }
        let bodies = parser.parse_line(&text);
        self.give_owed(parser, conversation.is_some());
        for body in bodies {
            if let Some(why) = self.auth_failure(&body) {
                interruption.get_or_insert(Interruption::AuthFailed(why));
            }
            if !body.is_terminal() {
                let more = conversation
                    .as_deref_mut()
                    .map(|c| c.see(&body))
                    .unwrap_or_default();
                let hidden = self.hidden_by_box(&body);
                self.emit(body, Some(text.clone()));
                if let Some(hidden) = hidden {
                    // Made from the same line, so a replay after a takeover skips it too.
                    self.emit(EventBody::BoxHidden(hidden), None);
                }
                for body in more {
                    self.emit_own(body, None);
                }
                continue;
            }
            // The first result is the turn's; in a conversation, a result given while input
            // was still owed is followed by another, which replaces it.
            if held.as_ref().is_some_and(|h| h.linger_until.is_some()) {
                continue;
            }
            let settled = conversation.as_deref().is_none_or(Conversation::settled);
            let linger = Instant::now() + self.run.settings.watchdog.linger;
            *held = Some(Held {
                body,
                raw: Some(text.clone()),
                linger_until: settled.then_some(linger),
            });
            if settled {
                let withdrawn = conversation.as_deref_mut().map(Conversation::close);
                for body in withdrawn.unwrap_or_default() {
                    self.emit_own(body, None);
                }
                watched.close_stdin();
            }
        }
    }

    /// Appends the lines the parser owes the agent to the turn's input file, each unless the
    /// file holds it already (a replay owes what was given before the takeover). Only a
    /// conversation's stdin reads the file; another agent's owed lines are dropped.
    pub(super) fn give_owed(&mut self, parser: &mut dyn AgentParser, converses: bool) {
        for line in parser.owed_input() {
            if !converses {
                continue;
            }
            if let Err(e) = crate::runner::inbox::deliver(&self.files, self.plan.turn, &line) {
                let note = format!("cannot give the agent what its protocol expects next: {e}");
                self.emit_own(system_note(note), None);
            }
        }
    }

    /// The end of what the agent wrote to stderr.
    pub(super) fn stderr_tail(&self) -> String {
        let path = self.files.agent_stderr(self.plan.turn);
        let Ok(mut file) =
            runner_contract::private::open_no_follow(&path, std::fs::OpenOptions::new().read(true))
        else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let start = len.saturating_sub(runner_process::STDERR_TAIL as u64);
        let mut tail = Vec::new();
        use std::io::Seek;
        if file.seek(std::io::SeekFrom::Start(start)).is_err()
            || file.read_to_end(&mut tail).is_err()
        {
            return String::new();
        }
        String::from_utf8_lossy(&tail).into_owned()
    }

    pub(super) fn auth_failure(&mut self, body: &EventBody) -> Option<String> {
        match body {
            EventBody::TaskStarted(started) => {
                if let Some(id) = &started.agent_session_id {
                    self.record.agent_session_id = Some(id.clone());
                }
                None
            }
            EventBody::ProviderStatus(status)
                if status.status == ProviderState::AuthExpired
                    && self.run.settings.fail_fast_on_auth =>
            {
                Some(format!(
                    "the provider refused the credentials ({}): log in again or check the API key, then start a new session",
                    status.message
                ))
            }
            _ => None,
        }
    }

    /// The `box.hidden` warning a boxed turn's failed command calls for ([`crate::runner::hidden`]).
    pub(super) fn hidden_by_box(
        &self,
        body: &EventBody,
    ) -> Option<runner_contract::event::BoxHidden> {
        let EventBody::CommandFinished(finished) = body else {
            return None;
        };
        // On a remote engine the caller's PATH is not the box's to have.
        if self.record.isolation != runner_contract::options::Isolation::Box
            || !self.record.engine.is_local()
        {
            return None;
        }
        let path = self
            .run
            .settings
            .caller_env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        let home = self
            .run
            .settings
            .caller_env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| std::path::Path::new(v.as_str()));
        crate::runner::hidden::hidden_program(finished, path, home)
    }

    pub(super) fn note(&mut self, text: String) {
        self.emit(system_note(text), None);
    }

    /// Numbers an event; it goes to the log with the next flush, unless the log already
    /// holds it (from a supervisor that went away).
    pub(super) fn emit(&mut self, body: EventBody, raw: Option<String>) {
        // Replayed events too: a takeover counts repeats as the supervisor before it did.
        self.repeats.see(&body);
        let repo_tests = self.repo_test_result(&body);
        if self.skip > 0 {
            self.skip -= 1;
        } else {
            self.emit_own(body, raw);
        }
        if let Some(test) = repo_tests {
            self.emit(test, None);
        }
    }

    /// The `test.result` of a command that ran the repo's own test command (its profile's,
    /// which `--verify` runs) when the agent's parser did not know it for one: whatever
    /// runner the repo uses, its verdict counts like `npm test`'s.
    fn repo_test_result(&self, body: &EventBody) -> Option<EventBody> {
        let EventBody::CommandFinished(finished) = body else {
            return None;
        };
        let repo = self.profile.test_command.as_deref()?;
        (!runner_contract::testrun::is_test_command(&finished.command)
            && runner_contract::testrun::runs_repo_tests(&finished.command, repo))
        .then(|| runner_contract::testrun::result_of(finished))
    }

    /// Numbers an event that does not follow from the agent's output (what callers' input
    /// made): a replay never makes it again, so it is never skipped.
    pub(super) fn emit_own(&mut self, body: EventBody, raw: Option<String>) {
        let body = self.normalise(body);
        let event = self.seq.next(body, raw);
        self.pending.push(event);
    }

    /// Appends the events made since the last flush, in one write. On a full disk they are
    /// kept for the turn's end to try again (none is numbered twice).
    pub(super) fn flush_events(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        match self.log.append(&self.pending) {
            Ok(()) => self.pending.clear(),
            Err(e) if disk::is_full(&e) => self.saw(&e),
            Err(e) => {
                tracing::error!(session = %self.record.session_id, "cannot append to the event log: {e}");
                self.pending.clear();
            }
        }
    }

    /// What only the runner knows: whether this run is a resume, and the worktree
    /// (file paths are reported relative to it, whatever form the agent used).
    pub(super) fn normalise(&self, mut body: EventBody) -> EventBody {
        match &mut body {
            EventBody::TaskStarted(started) => {
                started.resumed = self.request.resume.is_some();
                // An agent that does not say its model ran the one it was asked for.
                if started.model.is_none() {
                    started.model = self.request.model.clone();
                }
            }
            EventBody::FileRead(file) => file.path = self.relative(&file.path),
            EventBody::FileChanged(file) => file.path = self.relative(&file.path),
            _ => {}
        }
        body
    }

    pub(super) fn relative(&self, path: &str) -> String {
        let worktree = &self.record.worktree_path;
        match std::path::Path::new(path).strip_prefix(worktree) {
            Ok(rest) if !rest.as_os_str().is_empty() => rest.to_string_lossy().into_owned(),
            _ => path.to_owned(),
        }
    }
}

/// A `message` from codehands about the run.
pub(super) fn system_note(text: String) -> EventBody {
    EventBody::Message(Message {
        text,
        role: MessageRole::System,
        ..Message::default()
    })
}

/// The values of variables whose names say they are secret (keys, tokens, passwords), and
/// of those the agent declares as its key (`Agent::secret_envs`) whatever their names.
pub(super) fn secret_values(env: &[(String, String)], declared: &[String]) -> Vec<String> {
    const MARKS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
    env.iter()
        .filter(|(k, v)| {
            v.len() >= 8
                && (declared.contains(k)
                    || MARKS.iter().any(|m| k.to_ascii_uppercase().contains(m)))
        })
        .map(|(_, v)| v.clone())
        .collect()
}

/// A line without its trailing `\r` (an agent that prints CRLF).
pub(super) fn strip_cr(mut text: String) -> String {
    if text.ends_with('\r') {
        text.pop();
    }
    text
}
