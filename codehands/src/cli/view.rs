//! The human view of a run: one readable line per event, a spinner with the
//! elapsed time and the cost while the agent works, the diff stat at the end.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use runner_contract::event::{EventBody, ProviderState};
use runner_contract::present::{self, stat_line, visible};
use runner_contract::{DiffStat, Event};

use super::output::paint;

/// Renders events as lines of text.
pub struct HumanView {
    colour: bool,
    started: Instant,
    cost_usd: Option<f64>,
    spinner: bool,
    frame: usize,
}

impl HumanView {
    /// A view; colour and the spinner only on a terminal.
    pub fn new(colour: bool) -> Self {
        let spinner =
            std::io::stderr().is_terminal() && std::env::var_os("CODEHANDS_NO_SPINNER").is_none();
        Self {
            colour,
            started: Instant::now(),
            cost_usd: None,
            spinner,
            frame: 0,
        }
    }

    /// The line of one event.
    pub fn line(&mut self, event: &Event) -> String {
        let c = self.colour;
        let (kind, text) = describe(&event.body);
        if let EventBody::TaskFinished(f) = &event.body {
            self.cost_usd = f.cost_usd.or(self.cost_usd);
        }
        let colour_code = match &event.body {
            EventBody::TaskFailed(_) => "31",
            EventBody::TestResult(t) if t.could_not_run.is_some() => "33",
            EventBody::TaskFinished(_) | EventBody::ApprovalRequested(_) => "32",
            EventBody::TestResult(t) if t.passed => "32",
            EventBody::TestResult(_) => "31",
            EventBody::Message(m) if m.denied => "33",
            EventBody::ProviderStatus(_) | EventBody::TaskStopped(_) | EventBody::BoxHidden(_) => {
                "33"
            }
            _ => "36",
        };
        let mut line = format!(
            "{} {} {}",
            paint(c, "2", &format!("{:>4}", event.seq)),
            paint(c, colour_code, &format!("{kind:<18}")),
            text
        );
        if let EventBody::TaskFailed(f) = &event.body {
            line.push_str(&stderr_tail(c, f.stderr.as_deref().unwrap_or("")));
        }
        line
    }

    /// Prints an event's line (clearing the spinner first).
    pub fn print(&mut self, event: &Event) -> std::io::Result<()> {
        self.clear_spinner();
        let line = self.line(event);
        super::output::write_line(&line)
    }

    /// Redraws the spinner on stderr.
    pub fn tick(&mut self) {
        if !self.spinner {
            return;
        }
        const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        self.frame = (self.frame + 1) % FRAMES.len();
        let cost = self
            .cost_usd
            .map_or("$–".to_owned(), |c| format!("${c:.4}"));
        let elapsed = self.started.elapsed().as_secs();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{} working {}:{:02} · {cost}",
            FRAMES[self.frame],
            elapsed / 60,
            elapsed % 60
        );
        let _ = err.flush();
    }

    /// Removes the spinner line.
    pub fn clear_spinner(&self) {
        if self.spinner {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    /// How often the spinner redraws.
    pub const TICK: Duration = Duration::from_millis(120);
}

/// How many of the agent's last stderr lines a failure shows.
const STDERR_LINES: usize = 8;

/// The last lines of the agent's stderr, under a failure's line: the reason is usually
/// there ("not logged in", a stack trace), and `--json` is not where a person looks.
fn stderr_tail(colour: bool, stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(STDERR_LINES);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!(
            "\n       {}",
            paint(colour, "2", "stderr (last lines):")
        ));
    } else if !lines.is_empty() {
        out.push_str(&format!("\n       {}", paint(colour, "2", "stderr:")));
    }
    for l in &lines[start..] {
        out.push_str(&format!("\n       {}", visible(l, false)));
    }
    out
}

/// A tool's input on one line: the command of a shell tool, else its JSON.
pub fn tool_input(input: &serde_json::Value) -> String {
    match input.get("command").and_then(serde_json::Value::as_str) {
        Some(command) => flat(command),
        None => flat(&input.to_string()),
    }
}

/// `type` and a short description of an event.
pub fn describe(body: &EventBody) -> (&'static str, String) {
    let text = match body {
        EventBody::TaskStarted(s) => {
            let model = s.model.as_deref().unwrap_or("default model");
            if s.resumed {
                format!("resumed ({model})")
            } else {
                format!("started ({model})")
            }
        }
        // A refusal is said whole: what was refused and the setting that allows it
        // (agent-claude writes both into the text; ARCHITECTURE.md, "agent-claude").
        EventBody::Message(m) if m.denied => {
            let text = present::one_line(&m.text, DENIED_LINE);
            match m.tool.as_deref() {
                Some(tool) if !text.contains(tool) => format!("denied {tool}: {text}"),
                None => format!("denied a tool: {text}"),
                Some(_) => format!("denied: {text}"),
            }
        }
        // The person's own text as the agent took it in (the prompt, a follow-up, a steer).
        EventBody::Message(m) if m.role == runner_contract::event::MessageRole::User => {
            format!("you: {}", flat(&m.text))
        }
        EventBody::Message(m) => flat(&m.text),
        EventBody::FileRead(f) => format!("{} ({})", f.path, f.tool),
        EventBody::FileChanged(f) => format!("{} ({})", f.path, f.tool),
        EventBody::CommandStarted(c) => format!("$ {}", flat(&c.command)),
        EventBody::CommandFinished(c) => match c.exit_code {
            Some(code) => format!("$ {} → exit {code}", flat(&c.command)),
            None if c.is_error => format!("$ {} → error", flat(&c.command)),
            None => format!("$ {} → done", flat(&c.command)),
        },
        EventBody::TestResult(t) if t.could_not_run.is_some() => format!(
            "{} could not run in the sandbox ({})",
            t.command,
            t.summary.as_deref().unwrap_or("the box could not run it")
        ),
        EventBody::TestResult(t) => {
            let verdict = if t.passed { "passed" } else { "failed" };
            let place = if t.sandboxed { " in the sandbox" } else { "" };
            let summary = t
                .summary
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            format!("{} {verdict}{place}{summary}", t.command)
        }
        EventBody::ProviderStatus(p) => {
            let state = match p.status {
                ProviderState::RateLimited => "rate limited",
                ProviderState::AuthExpired => "authentication failed",
                ProviderState::UsageLimit => "usage limit reached",
                ProviderState::SubscriptionInactive => "subscription inactive",
                ProviderState::Down => "provider down",
            };
            let resets = p
                .resets_at
                .as_deref()
                .map(|r| format!(", resets at {r}"))
                .unwrap_or_default();
            format!("{state}{resets}: {}", flat(&p.message))
        }
        EventBody::TaskFinished(f) => {
            let cost = f
                .cost_usd
                .map(|c| format!(" · ${c:.4}"))
                .unwrap_or_default();
            let stat = f
                .diff_stat
                .as_ref()
                .map(|s| format!(" · {}", stat_line(s)))
                .unwrap_or_default();
            let how = if f.interrupted {
                "interrupted"
            } else {
                "finished"
            };
            format!("{how}{cost}{stat}")
        }
        EventBody::PermissionRequested(p) => {
            format!(
                "asks to use {}: {} (request {})",
                p.tool,
                tool_input(&p.input),
                p.request_id
            )
        }
        EventBody::PermissionResolved(p) => {
            let how = match p.outcome {
                runner_contract::event::PermissionOutcome::Allowed => "allowed",
                runner_contract::event::PermissionOutcome::Denied => "denied",
                runner_contract::event::PermissionOutcome::TimedOut => "denied (no answer in time)",
            };
            format!("request {} {how}", p.request_id)
        }
        EventBody::TaskFailed(f) => flat(&f.message),
        EventBody::TaskStopped(s) => s
            .reason
            .clone()
            .unwrap_or_else(|| "stopped; resume it with `codehands resume`".into()),
        EventBody::ApprovalRequested(a) => format!("waiting for approval on {}", a.branch),
        EventBody::PhaseStarted(p) => format!(
            "{} ({}, {}{}{}){}",
            p.name,
            p.kind.as_str(),
            p.agent,
            p.model
                .as_deref()
                .map(|m| format!(":{m}"))
                .unwrap_or_default(),
            if p.read_only { ", read-only" } else { "" },
            if p.round > 1 {
                format!(", round {}", p.round)
            } else {
                String::new()
            },
        ),
        EventBody::PhaseFinished(p) => match p.cost_usd {
            Some(cost) => format!("{} done (${cost:.4})", p.name),
            None => format!("{} done", p.name),
        },
        EventBody::ReviewFinding(f) => match f.line {
            Some(line) => format!(
                "[{}] {}:{line} {}",
                f.severity.as_str(),
                f.file,
                flat(&f.text)
            ),
            None => format!("[{}] {} {}", f.severity.as_str(), f.file, flat(&f.text)),
        },
        EventBody::BoxHidden(h) => format!(
            "{} is not in the box, so `{}` failed: your PATH has {}; bring it in with \
             [box] read = [\"{}\"] in $CODEHANDS_HOME/config.toml, or run with --isolation none",
            h.program,
            flat(&h.command),
            h.found,
            h.folder
        ),
    };
    // Everything above may hold the agent's text: it is shown, never obeyed.
    (body.type_name(), visible(&text, false).into_owned())
}

/// The per-file stat, as `git diff --stat` shows it.
pub fn stat_table(stat: &DiffStat) -> String {
    // A rename shows both names, as `git diff --stat` does: `old => new`.
    let name = |f: &runner_contract::FileStat| match &f.old_path {
        Some(old) if *old != f.path => {
            format!("{} => {}", visible(old, false), visible(&f.path, false))
        }
        _ => visible(&f.path, false).into_owned(),
    };
    let names: Vec<String> = stat.files.iter().map(name).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (f, name) in stat.files.iter().zip(&names) {
        let counts = if f.too_large {
            "too large to show".to_owned()
        } else if f.binary {
            "binary".to_owned()
        } else {
            format!("+{} -{}", f.insertions, f.deletions)
        };
        out.push_str(&format!(" {name:<width$} | {counts}\n"));
    }
    out.push_str(&format!(" {}", stat_line(stat)));
    out
}

/// The most characters of a refusal's line: the command (cut to 120 by the agent's
/// parser), the setting that would allow it and the agent's reason.
const DENIED_LINE: usize = 480;

/// The agent's text on one line, cut to what a line of the view holds; [`describe`] makes
/// it visible.
fn flat(text: &str) -> String {
    present::one_line(text, 160)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::event::Message;

    #[test]
    fn a_rename_shows_the_old_name() {
        let stat = DiffStat::from_files(vec![runner_contract::FileStat {
            path: "README2.md".into(),
            old_path: Some("README.md".into()),
            insertions: 0,
            deletions: 0,
            binary: false,
            too_large: false,
        }]);
        assert!(
            stat_table(&stat).contains(" README.md => README2.md | +0 -0"),
            "{}",
            stat_table(&stat)
        );
    }

    #[test]
    fn a_failure_shows_the_last_lines_of_stderr() {
        let mut view = HumanView::new(false);
        let stderr: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let event = runner_contract::EventSequence::new(runner_contract::SessionId::new_random())
            .next(
                EventBody::TaskFailed(runner_contract::event::TaskFailed {
                    reason: runner_contract::event::FailureKind::NoResult,
                    message: "the agent exited without a result".into(),
                    stderr: Some(format!("{stderr}\u{1b}[2Jnot logged in")),
                    exit_code: Some(1),
                    cost_usd: None,
                }),
                None,
            );
        let text = view.line(&event);
        assert!(text.contains("stderr (last lines):"), "{text}");
        assert!(
            text.contains("not logged in") && text.contains("line 14"),
            "{text}"
        );
        assert!(
            !text.contains("line 13\n") && !text.contains('\u{1b}'),
            "{text}"
        );
    }

    #[test]
    fn a_refusal_is_one_whole_line_with_the_setting_that_allows_it() {
        let text = format!(
            "Claude Code was refused Bash: {}(no approval surface) — to allow it, add [agent] \
             allow = [\"Bash(curl:*)\"] to $CODEHANDS_HOME/config.toml or the repo's committed \
             .codehands.toml",
            "curl -s x ".repeat(12)
        );
        assert!(text.chars().count() > 160);
        let (kind, line) = describe(&EventBody::Message(Message {
            text,
            denied: true,
            tool: Some("Bash".into()),
            ..Message::default()
        }));
        assert_eq!(kind, "message");
        assert!(
            line.starts_with("denied: Claude Code was refused Bash: curl -s x"),
            "{line}"
        );
        assert!(
            line.ends_with("or the repo's committed .codehands.toml"),
            "{line}"
        );
    }

    #[test]
    fn control_and_bidi_characters_are_shown_not_sent() {
        let body = EventBody::Message(Message {
            text: "a\u{1b}]0;t\u{7}\u{1b}[2J\u{9b}1m\u{202e}b\u{7f}".into(),
            ..Message::default()
        });
        let (_, text) = describe(&body);
        assert_eq!(text, "a\\x1b]0;t\\x07\\x1b[2J\\x9b1m\\u{202e}b\\x7f");
        assert_eq!(visible("plain ✓ text", false), "plain ✓ text");
        assert_eq!(visible("l1\n\tl2\u{1b}", true), "l1\n\tl2\\x1b");
    }
}
