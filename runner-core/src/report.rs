//! The final report of a session (seed 003's `summarize`/`finalReport`): what a person reads
//! before trusting the diff. Built from the session's record and its event log alone, with no
//! I/O, so the report of a run that ended while nobody watched reads exactly like the report
//! of a watched one, and a caller can build it from any copy of the log.

use std::collections::{BTreeMap, HashMap, HashSet};

use runner_contract::event::{Event, EventBody, FileChangeKind, MessageRole, PermissionOutcome};
use runner_contract::present::{self, stat_line};
use runner_contract::session::{SessionRecord, SessionState, TokenCounts};

use runner_contract::report::{
    COMMAND_TOOL, ChangedFile, CommandRun, DeniedTool, RunEnding, RunReport, TestOutcome,
};

/// What [`build`] reads: the record and the log of one session, and what only the caller
/// knows about the agent.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// The session's record, as the store holds it.
    pub record: &'a SessionRecord,
    /// The session's event log, in seq order (`runs/<id>/events.jsonl`).
    pub events: &'a [Event],
    /// The agent's program, as the runner resolved it (the log does not say).
    pub agent_program: Option<&'a str>,
    /// The agent program's version, as its version probe printed it (the log does not say).
    pub agent_version: Option<&'a str>,
}

/// The report of one session from its record and log.
pub fn build(input: ReportInput<'_>) -> RunReport {
    let ReportInput {
        record,
        events,
        agent_program,
        agent_version,
    } = input;
    let (ended, end) = ending(record.state, events);
    let started_at = events.first().map(|e| e.ts.clone());
    let ended_at = end.map(|e| e.ts.clone());
    let duration_ms = started_at
        .as_deref()
        .zip(ended_at.as_deref())
        .and_then(|(from, to)| millis_between(from, to));
    let (cost_usd, tokens) = cost_of(events);

    let mut turns = 0;
    let mut reported_model = None;
    let mut tools = ToolTally::default();
    let mut read = Vec::new();
    let mut changed: BTreeMap<String, Option<FileChangeKind>> = BTreeMap::new();
    let mut commands = Vec::new();
    let mut tests = Vec::new();
    let mut denied_tools = Vec::new();
    // The tool of each permission request, for the denial its answer may be.
    let mut asked: BTreeMap<&str, &str> = BTreeMap::new();
    let mut last_assistant = None;
    let mut last_result = None;
    let mut diff_stat = None;
    for event in events {
        tools.see(&event.body);
        match &event.body {
            EventBody::TaskStarted(s) => {
                turns += 1;
                reported_model = s.model.clone().or(reported_model);
            }
            EventBody::Message(m) => {
                if m.denied {
                    denied_tools.push(DeniedTool {
                        tool: m.tool.clone(),
                        text: m.text.clone(),
                    });
                }
                if m.role == MessageRole::Assistant {
                    last_assistant = Some(&m.text);
                }
            }
            EventBody::FileRead(r) => read.push(r.path.clone()),
            EventBody::FileChanged(c) => {
                let kind = changed.entry(c.path.clone()).or_default();
                *kind = merge_change(*kind, c.change);
            }
            EventBody::CommandFinished(c) => commands.push(CommandRun {
                command: c.command.clone(),
                exit_code: c.exit_code,
                is_error: c.is_error,
            }),
            EventBody::TestResult(t) => tests.push(TestOutcome {
                command: t.command.clone(),
                passed: t.passed,
                exit_code: t.exit_code,
                sandboxed: t.sandboxed,
                summary: t.summary.clone(),
            }),
            EventBody::TaskFinished(f) => {
                last_result = f.result.as_ref().or(last_result);
                diff_stat = f.diff_stat.clone().or(diff_stat);
            }
            EventBody::ApprovalRequested(a) => diff_stat = Some(a.diff_stat.clone()),
            EventBody::CommandStarted(_)
            | EventBody::ProviderStatus(_)
            | EventBody::TaskFailed(_)
            | EventBody::TaskStopped(_)
            | EventBody::PhaseStarted(_)
            | EventBody::PhaseFinished(_)
            | EventBody::ReviewFinding(_)
            | EventBody::BoxHidden(_) => {}
            EventBody::PermissionRequested(p) => {
                asked.insert(&p.request_id, &p.tool);
            }
            EventBody::PermissionResolved(p) if p.outcome != PermissionOutcome::Allowed => {
                let tool = asked.get(p.request_id.as_str()).map(|t| (*t).to_owned());
                let why = p.message.as_deref().unwrap_or("denied");
                denied_tools.push(DeniedTool {
                    text: format!(
                        "{} was asked for and not allowed: {why}",
                        tool.as_deref().unwrap_or("a tool")
                    ),
                    tool,
                });
            }
            EventBody::PermissionResolved(_) => {}
        }
    }
    read.sort();
    read.dedup();
    // An agent that changed files through its shell (a patch applied by a command) says
    // no `file.changed`: the diff stat still knows them.
    if let Some(stat) = &diff_stat {
        for file in &stat.files {
            changed.entry(file.path.clone()).or_insert(None);
        }
    }

    RunReport {
        session_id: record.session_id,
        state: record.state,
        task_id: record.task_id,
        ended,
        started_at,
        ended_at,
        duration_ms,
        agent: record.agent.clone(),
        agent_program: agent_program.map(str::to_owned),
        agent_version: agent_version.map(str::to_owned),
        model: record.model.clone().or(reported_model),
        turns,
        tool_calls: tools.counts,
        files_read: read,
        files_changed: changed
            .into_iter()
            .map(|(path, change)| ChangedFile { path, change })
            .collect(),
        commands,
        tests,
        denied_tools,
        // Every agent we know prints its final text as a message too; the result covers
        // one that only puts it in its result line.
        last_assistant_text: last_assistant.or(last_result).cloned(),
        cost_usd,
        tokens,
        diff_stat,
        event_count: events.len() as u64,
        last_seq: events.last().map_or(0, |e| e.seq),
    }
}

/// What the runs in `events` cost and the tokens they used, summed over every `task.finished`
/// and `task.failed` (a resumed session has one per run, each reporting its own run). `None`
/// when no run reported a cost, or tokens. The runner stores the same sums on the record.
pub fn cost_of(events: &[Event]) -> (Option<f64>, Option<TokenCounts>) {
    let mut cost: Option<f64> = None;
    let mut tokens: Option<TokenCounts> = None;
    for event in events {
        let (run_cost, run_tokens) = match &event.body {
            EventBody::TaskFinished(f) => (f.cost_usd, f.usage.as_ref().and_then(tokens_of)),
            // A failed run reports what it spent so far, but no usage.
            EventBody::TaskFailed(f) => (f.cost_usd, None),
            _ => continue,
        };
        if let Some(c) = run_cost {
            cost = Some(cost.unwrap_or(0.0) + c);
        }
        if let Some(t) = run_tokens {
            tokens = Some(tokens.unwrap_or_default() + t);
        }
    }
    (cost, tokens)
}

/// The tokens of one `task.finished` `usage` object, in either shape agents print:
/// Anthropic's Messages API, where `input_tokens` leaves out the cache, so input is
/// `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`; or OpenAI's
/// (OpenAI's Responses API), marked by `cached_input_tokens`, where the cached tokens are already part of
/// `input_tokens`. Output is `output_tokens` in both. `None` when it holds neither count.
pub fn tokens_of(usage: &serde_json::Value) -> Option<TokenCounts> {
    let count = |key: &str| usage.get(key).and_then(serde_json::Value::as_u64);
    let (input, output) = (count("input_tokens"), count("output_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    let mut input = input.unwrap_or(0);
    if usage.get("cached_input_tokens").is_none() {
        for key in ["cache_read_input_tokens", "cache_creation_input_tokens"] {
            input = input.saturating_add(count(key).unwrap_or(0));
        }
    }
    Some(TokenCounts {
        input,
        output: output.unwrap_or(0),
    })
}

/// How the last run ended, and the event that says so.
fn ending(state: SessionState, events: &[Event]) -> (RunEnding, Option<&Event>) {
    // The record moves to running before a resumed agent prints its first line, so while
    // it says running the log's last ending is the previous run's.
    if matches!(state, SessionState::Queued | SessionState::Running) {
        return (RunEnding::Running, None);
    }
    let last_start = events
        .iter()
        .rposition(|e| matches!(e.body, EventBody::TaskStarted(_)));
    let last_end = events.iter().rposition(|e| e.body.is_terminal());
    let Some(at) = last_end.filter(|&end| last_start.is_none_or(|start| start < end)) else {
        return (RunEnding::Unknown, None);
    };
    let event = &events[at];
    let ended = match &event.body {
        EventBody::TaskFinished(_) => RunEnding::Finished {
            approval_requested: events[at..]
                .iter()
                .any(|e| matches!(e.body, EventBody::ApprovalRequested(_))),
        },
        EventBody::TaskFailed(f) => RunEnding::Failed {
            reason: f.reason,
            message: f.message.clone(),
            exit_code: f.exit_code,
        },
        EventBody::TaskStopped(s) => RunEnding::Stopped {
            reason: s.reason.clone(),
        },
        _ => unreachable!("is_terminal holds only for the three endings"),
    };
    (ended, Some(event))
}

fn millis_between(from: &str, to: &str) -> Option<u64> {
    let from = humantime::parse_rfc3339(from).ok()?;
    let to = humantime::parse_rfc3339(to).ok()?;
    let millis = to.duration_since(from).ok()?.as_millis();
    u64::try_from(millis).ok()
}

/// A file's change kind over a session, from the kind so far and the next change's.
fn merge_change(
    so_far: Option<FileChangeKind>,
    next: Option<FileChangeKind>,
) -> Option<FileChangeKind> {
    use FileChangeKind::*;
    match (so_far, next) {
        (so_far, None) => so_far,
        (None, next) => next,
        (_, Some(Deleted)) => Some(Deleted),
        // Removed, then written again: the path exists as it did at the base, changed.
        (Some(Deleted), Some(_)) => Some(Modified),
        // A new file stays new however often it is edited; likewise a rename.
        (Some(first), Some(_)) => Some(first),
    }
}

/// Counts tool calls from the events, each call once. A call can make several events: one
/// patch changes several files (one `file.changed` each, same tool use id), and a failing or
/// refused read or command has its `file.read` or `command.started` and then a `message`
/// naming the tool (which carries no id). Such a message counts only when no earlier event
/// of the same call was counted: a failed edit, a refused write, a tool that does not exist.
#[derive(Default)]
struct ToolTally {
    counts: BTreeMap<String, u64>,
    /// Tool use ids already counted.
    ids: HashSet<String>,
    /// Reads per tool that no failure or refusal message has been matched to yet.
    unmatched_reads: HashMap<String, u64>,
    /// Commands started and not finished, by id, and whether a refusal was matched to them.
    open_commands: Vec<(Option<String>, bool)>,
}

impl ToolTally {
    fn see(&mut self, body: &EventBody) {
        match body {
            // The guards record the id: a later event of the same call falls through to `_`.
            EventBody::FileRead(r) if self.first_of_call(r.tool_use_id.as_ref()) => {
                self.count(&r.tool);
                *self.unmatched_reads.entry(r.tool.clone()).or_default() += 1;
            }
            EventBody::FileChanged(c) if self.first_of_call(c.tool_use_id.as_ref()) => {
                self.count(&c.tool);
            }
            EventBody::CommandStarted(c) if self.first_of_call(c.tool_use_id.as_ref()) => {
                self.count(COMMAND_TOOL);
                self.open_commands.push((c.tool_use_id.clone(), false));
            }
            EventBody::CommandFinished(c) => {
                let at = match &c.tool_use_id {
                    Some(id) => self
                        .open_commands
                        .iter()
                        .position(|(open, _)| open.as_ref() == Some(id)),
                    None => (!self.open_commands.is_empty()).then_some(0),
                };
                if let Some(at) = at {
                    self.open_commands.remove(at);
                }
            }
            EventBody::Message(m) => {
                if let Some(tool) = &m.tool
                    && !self.match_to_earlier(tool, m.denied)
                {
                    self.count(tool);
                }
            }
            _ => {}
        }
    }

    /// Whether this event is the first of its call (always, for an event without an id).
    fn first_of_call(&mut self, id: Option<&String>) -> bool {
        id.is_none_or(|id| self.ids.insert(id.clone()))
    }

    /// Matches a message about `tool` to the earlier event of the same call, if there is one.
    fn match_to_earlier(&mut self, tool: &str, denied: bool) -> bool {
        if let Some(reads) = self.unmatched_reads.get_mut(tool).filter(|n| **n > 0) {
            *reads -= 1;
            return true;
        }
        // A refused command is reported between its start and its end; a failed command
        // is reported by its `command.finished` alone, never by a message.
        if denied && let Some(open) = self.open_commands.iter_mut().find(|(_, matched)| !matched) {
            open.1 = true;
            return true;
        }
        false
    }

    fn count(&mut self, tool: &str) {
        *self.counts.entry(tool.to_owned()).or_default() += 1;
    }
}

/// A short plain-text view of a report for `codehands report ID`: one aligned line per
/// field, agent text on one line, shortened, and with control characters escaped.
pub fn render_human(report: &RunReport) -> String {
    let mut lines: Vec<(&str, String)> = Vec::new();
    lines.push(("session", report.session_id.to_string()));
    let state = match ended_text(&report.ended) {
        Some(how) => format!("{} ({how})", report.state),
        None => report.state.to_string(),
    };
    lines.push(("state", state));
    let none = || "-".to_owned();
    lines.push(("started", report.started_at.clone().unwrap_or_else(none)));
    let ended = match (&report.ended_at, report.duration_ms) {
        (Some(at), Some(ms)) => format!("{at} ({})", duration_text(ms)),
        (Some(at), None) => at.clone(),
        (None, _) => none(),
    };
    lines.push(("ended", ended));
    let mut agent = vec![report.agent.to_string()];
    match (&report.agent_program, &report.agent_version) {
        (Some(p), Some(v)) => agent.push(format!("{p} {v}")),
        (Some(p), None) => agent.push(format!("{p} (version unknown)")),
        (None, Some(v)) => agent.push(format!("version {v}")),
        (None, None) => {}
    }
    if let Some(model) = &report.model {
        agent.push(format!("model {model}"));
    }
    lines.push(("agent", agent.join(" · ")));
    lines.push(("turns", report.turns.to_string()));
    lines.push((
        "tools",
        list(report.tool_calls.iter().map(|(t, n)| format!("{t} {n}"))),
    ));
    lines.push(("read", list(report.files_read.iter().cloned())));
    lines.push((
        "changed",
        list(report.files_changed.iter().map(|f| match f.change {
            Some(kind) => format!("{} ({})", f.path, change_text(kind)),
            None => f.path.clone(),
        })),
    ));
    let mut commands = Vec::new();
    for c in &report.commands {
        let exit = c
            .exit_code
            .map_or_else(|| "no exit code".to_owned(), |code| format!("exit {code}"));
        let error = if c.is_error { ", error" } else { "" };
        commands.push(format!("$ {} → {exit}{error}", c.command));
    }
    lines.extend(each("commands", commands));
    let mut tests = Vec::new();
    for t in &report.tests {
        let mut text = format!(
            "{} {}",
            t.command,
            if t.passed { "passed" } else { "failed" }
        );
        if let Some(code) = t.exit_code {
            text.push_str(&format!(", exit {code}"));
        }
        if t.sandboxed {
            text.push_str(", in the sandbox");
        }
        if let Some(summary) = &t.summary {
            text.push_str(&format!(" ({summary})"));
        }
        tests.push(text);
    }
    lines.extend(each("tests", tests));
    // Refusals usually name their tool already (as in "… was refused Bash: …"), and the
    // setting that would allow it; the count first, since a refusal can be why no test ran.
    let mut denied: Vec<String> = report
        .denied_tools
        .iter()
        .map(|d| match &d.tool {
            Some(tool) if !d.text.contains(tool.as_str()) => format!("{tool}: {}", d.text),
            _ => d.text.clone(),
        })
        .collect();
    if !denied.is_empty() {
        denied.insert(0, format!("{} tool use(s) refused", denied.len()));
    }
    lines.extend(each("denied", denied));
    let mut cost = match report.cost_usd {
        Some(usd) => format!("${usd:.4}"),
        None => "not reported".to_owned(),
    };
    if let Some(t) = report.tokens {
        cost.push_str(&format!(" · {} in, {} out tokens", t.input, t.output));
    }
    lines.push(("cost", cost));
    match &report.diff_stat {
        Some(stat) => {
            lines.push(("diff", stat_line(stat)));
            for f in &stat.files {
                let counts = if f.too_large {
                    "too large to show".to_owned()
                } else if f.binary {
                    "binary".to_owned()
                } else {
                    format!("+{} -{}", f.insertions, f.deletions)
                };
                lines.push(("diff", format!("{} | {counts}", f.path)));
            }
        }
        None => lines.push(("diff", none())),
    }
    lines.push((
        "last text",
        report.last_assistant_text.clone().unwrap_or_else(none),
    ));

    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    let mut previous = "";
    for (key, value) in lines {
        // Repeated keys (several commands, tests) are written once, on the first line.
        let shown_key = if key == previous { "" } else { key };
        previous = key;
        // A refusal's line ends with the setting that allows it: kept whole.
        let limit = if key == "denied" { DENIED_LINE } else { LINE };
        out.push_str(&format!("{shown_key:<width$}  {}\n", shown(&value, limit)));
    }
    out
}

/// How the run ended, when the state alone does not say it all.
fn ended_text(ended: &RunEnding) -> Option<String> {
    match ended {
        RunEnding::Finished { approval_requested } => Some(if *approval_requested {
            "finished, approval requested".into()
        } else {
            "finished".into()
        }),
        RunEnding::Failed {
            reason, message, ..
        } => {
            let kind = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            Some(format!("{kind}: {message}"))
        }
        RunEnding::Stopped { reason } => reason.clone(),
        RunEnding::Running => None,
        RunEnding::Stalled { phase } => Some(format!(
            "stalled: the workflow's driver went away before phase {phase:?}; `codehands \
             events ID --follow` or `codehands recover` goes on with it"
        )),
        RunEnding::Unknown => Some("the log does not say how it ended".into()),
    }
}

fn change_text(kind: FileChangeKind) -> &'static str {
    match kind {
        FileChangeKind::Added => "added",
        FileChangeKind::Modified => "modified",
        FileChangeKind::Deleted => "deleted",
        FileChangeKind::Renamed => "renamed",
    }
}

fn duration_text(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{}.{} s", secs, (ms % 1000) / 100),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600) / 60),
    }
}

/// One line per item under `key`, or one `-` when there is none.
fn each(key: &str, items: Vec<String>) -> Vec<(&str, String)> {
    if items.is_empty() {
        return vec![(key, "-".to_owned())];
    }
    items.into_iter().map(|item| (key, item)).collect()
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "-".to_owned()
    } else {
        items.join(", ")
    }
}

/// Most values here are the agent's text: on one line, at most 160 characters, and with
/// control and bidi characters shown as escapes, so that nothing the agent wrote can move the
/// cursor, retitle the terminal or reorder what the person reads.
/// The most characters of a report line.
const LINE: usize = 160;

/// The most characters of a refusal's line: its command (cut to 120 by the agent's parser),
/// the setting that allows it, and the agent's reason.
const DENIED_LINE: usize = 480;

fn shown(text: &str, limit: usize) -> String {
    present::visible(&present::one_line(text, limit), false).into_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use runner_contract::event::FailureKind;
    use runner_contract::ids::SessionId;

    use super::*;
    use runner_contract::event::{
        CommandFinished, CommandStarted, FileChanged, FileRead, Message, TaskFailed, TaskFinished,
        TaskStarted,
    };

    fn log(bodies: Vec<EventBody>) -> Vec<Event> {
        let session_id: SessionId = "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42".parse().unwrap();
        bodies
            .into_iter()
            .zip(1..)
            .map(|(body, seq)| Event {
                session_id,
                seq,
                ts: format!("2026-12-03T13:00:{:02}.000Z", seq % 60),
                body,
                raw: None,
            })
            .collect()
    }

    fn finished(cost: f64, usage: serde_json::Value) -> EventBody {
        EventBody::TaskFinished(TaskFinished {
            cost_usd: Some(cost),
            usage: Some(usage),
            ..TaskFinished::default()
        })
    }

    fn started() -> EventBody {
        EventBody::TaskStarted(TaskStarted::default())
    }

    #[test]
    fn cost_and_tokens_add_up_over_a_resumed_session() {
        // The Messages API's shape, as in the recordings of the built-in stream-json agent; the second run reads its
        // context from the cache and writes some of it.
        let events = log(vec![
            started(),
            EventBody::TaskStopped(Default::default()),
            started(),
            EventBody::TaskFailed(TaskFailed {
                reason: FailureKind::BudgetExhausted,
                message: "budget".into(),
                stderr: None,
                exit_code: None,
                cost_usd: Some(0.25),
            }),
            started(),
            finished(
                0.5,
                json!({"input_tokens": 200, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": 0, "output_tokens": 40}),
            ),
            started(),
            finished(
                0.125,
                json!({"input_tokens": 10, "cache_creation_input_tokens": 30,
                       "cache_read_input_tokens": 200, "output_tokens": 7,
                       "cache_creation": {"ephemeral_5m_input_tokens": 30}}),
            ),
        ]);
        let (cost, tokens) = cost_of(&events);
        assert_eq!(cost, Some(0.875));
        assert_eq!(
            tokens,
            Some(TokenCounts {
                input: 200 + 10 + 30 + 200,
                output: 47
            })
        );
    }

    #[test]
    fn responses_usage_counts_cached_tokens_once() {
        // A Responses-API agent's `turn.completed` usage (as recorded from one): the cached tokens are
        // part of `input_tokens`, so adding them would count them twice.
        let usage = json!({"input_tokens": 400, "cached_input_tokens": 300,
                           "cache_write_input_tokens": 0, "output_tokens": 80,
                           "reasoning_output_tokens": 20});
        assert_eq!(
            tokens_of(&usage),
            Some(TokenCounts {
                input: 400,
                output: 80
            })
        );
        let events = log(vec![
            started(),
            EventBody::TaskFinished(TaskFinished {
                usage: Some(usage.clone()),
                ..TaskFinished::default()
            }),
            started(),
            EventBody::TaskFinished(TaskFinished {
                usage: Some(usage),
                ..TaskFinished::default()
            }),
        ]);
        // That agent reports no cost: none is made up.
        assert_eq!(
            cost_of(&events),
            (
                None,
                Some(TokenCounts {
                    input: 800,
                    output: 160
                })
            )
        );
    }

    #[test]
    fn nothing_reported_is_none_not_zero() {
        assert_eq!(cost_of(&log(vec![started()])), (None, None));
        assert_eq!(tokens_of(&json!({"service_tier": "standard"})), None);
        assert_eq!(tokens_of(&json!("400")), None);
    }

    fn tally(bodies: Vec<EventBody>) -> Vec<(String, u64)> {
        let mut tally = ToolTally::default();
        for body in &bodies {
            tally.see(body);
        }
        tally.counts.into_iter().collect()
    }

    fn read(tool: &str, id: &str) -> EventBody {
        EventBody::FileRead(FileRead {
            path: "src/date.js".into(),
            tool: tool.into(),
            tool_use_id: Some(id.into()),
        })
    }

    fn tool_message(tool: &str, denied: bool) -> EventBody {
        EventBody::Message(Message {
            text: format!("{tool} failed"),
            role: MessageRole::System,
            denied,
            tool: Some(tool.into()),
        })
    }

    fn changed(path: &str, id: &str, change: Option<FileChangeKind>) -> EventBody {
        EventBody::FileChanged(FileChanged {
            path: path.into(),
            tool: "apply_patch".into(),
            change,
            tool_use_id: Some(id.into()),
        })
    }

    fn pairs(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
        expected
            .iter()
            .map(|(t, n)| ((*t).to_owned(), *n))
            .collect()
    }

    #[test]
    fn each_tool_call_counts_once() {
        let command = |id: &str| {
            EventBody::CommandStarted(CommandStarted {
                command: "curl -s http://127.0.0.1:9/".into(),
                tool_use_id: Some(id.into()),
            })
        };
        let command_end = |id: &str| {
            EventBody::CommandFinished(CommandFinished {
                command: "curl -s http://127.0.0.1:9/".into(),
                exit_code: None,
                is_error: true,
                output: String::new(),
                tool_use_id: Some(id.into()),
            })
        };
        let counts = tally(vec![
            // A read that succeeds and one that fails (a recorded tool-error).
            read("Read", "r1"),
            read("Read", "r2"),
            tool_message("Read", false),
            // One patch, two files (a recorded write-file).
            changed("src/date.js", "p1", Some(FileChangeKind::Modified)),
            changed("src/hello.js", "p1", Some(FileChangeKind::Added)),
            // A refused command (a recorded refused-command run).
            command("b1"),
            tool_message("Bash", true),
            command_end("b1"),
            // A refused edit, and a tool that does not exist (edit-files): no other event.
            tool_message("Edit", true),
            tool_message("MultiEdit", false),
            // A refusal after every command ended is a call of its own.
            tool_message("Bash", true),
        ]);
        assert_eq!(
            counts,
            pairs(&[
                ("Bash", 1),
                ("Edit", 1),
                ("MultiEdit", 1),
                ("Read", 2),
                ("apply_patch", 1),
                (COMMAND_TOOL, 1),
            ])
        );
    }

    #[test]
    fn a_change_kind_summarises_the_session() {
        use FileChangeKind::*;
        let kind = |changes: &[Option<FileChangeKind>]| {
            changes.iter().fold(None, |k, c| merge_change(k, *c))
        };
        assert_eq!(kind(&[Some(Added), Some(Modified)]), Some(Added));
        assert_eq!(kind(&[Some(Added), None]), Some(Added));
        assert_eq!(kind(&[None, Some(Modified)]), Some(Modified));
        assert_eq!(kind(&[Some(Modified), Some(Deleted)]), Some(Deleted));
        assert_eq!(kind(&[Some(Deleted), Some(Added)]), Some(Modified));
        assert_eq!(kind(&[None, None]), None);
    }

    #[test]
    fn the_ending_comes_from_the_last_run() {
        let stop = EventBody::TaskStopped(Default::default());
        // Stopped, then resumed: the record says running before the new run prints.
        let events = log(vec![started(), stop.clone()]);
        assert_eq!(ending(SessionState::Running, &events).0, RunEnding::Running);
        assert_eq!(
            ending(SessionState::Stopped, &events).0,
            RunEnding::Stopped { reason: None }
        );
        // A later run that started and has no ending in the log.
        let events = log(vec![started(), stop, started()]);
        assert_eq!(
            ending(SessionState::Failed, &events),
            (RunEnding::Unknown, None)
        );
        // A run that failed before the agent printed anything still says why.
        let events = log(vec![EventBody::TaskFailed(TaskFailed {
            reason: FailureKind::AgentUnavailable,
            message: "not on PATH".into(),
            stderr: None,
            exit_code: Some(127),
            cost_usd: None,
        })]);
        let (ended, at) = ending(SessionState::Failed, &events);
        assert_eq!(
            ended,
            RunEnding::Failed {
                reason: FailureKind::AgentUnavailable,
                message: "not on PATH".into(),
                exit_code: Some(127)
            }
        );
        assert_eq!(at.map(|e| e.seq), Some(1));
    }

    #[test]
    fn the_human_view_escapes_what_the_agent_wrote() {
        assert_eq!(
            shown("a\u{1b}[2J\n\tb\u{202e}c\u{7f}", LINE),
            "a\\x1b[2J b\\u{202e}c\\x7f"
        );
        let long = "x".repeat(200);
        assert_eq!(shown(&long, LINE).chars().count(), 160);
    }

    #[test]
    fn durations_read_as_a_person_would() {
        assert_eq!(
            millis_between("2026-12-03T13:02:50.112Z", "2026-12-03T13:03:11.976Z"),
            Some(21_864)
        );
        assert_eq!(
            millis_between("yesterday", "2026-12-03T13:03:11.976Z"),
            None
        );
        assert_eq!(duration_text(21_864), "21.8 s");
        assert_eq!(duration_text(125_000), "2 min 5 s");
        assert_eq!(duration_text(7_500_000), "2 h 5 min");
    }
}
