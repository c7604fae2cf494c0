//! The ACP client's side of a turn, as a parser: each line the agent prints becomes events,
//! and the lines codehands owes the agent in return (the handshake's next request, an error
//! for a request we do not serve) wait in [`AgentParser::owed_input`] for the runner to append
//! to the turn's input file. Everything follows from the agent's output and the turn's
//! request, so a parser replaying the output owes the same lines, which the input file
//! already holds (docs/acp.md).
//!
//! | agent's line | events | owed |
//! |---|---|---|
//! | result of `initialize` | — | `session/new` (or `session/resume`, `session/load` for a follow-up) |
//! | result of the session's opening | `task.started` (the session id, the model) | `session/prompt` |
//! | `session/update` `agent_message_chunk` | `message`, the chunks of one message joined | |
//! | `user_message_chunk` | `message` with role `user` | |
//! | `tool_call`, `tool_call_update` | by kind and status (`tools.rs`) | |
//! | `plan` | `message` listing its entries | |
//! | `usage_update` | its cost goes to `task.finished`, its context (`used`, `size`) to its `usage.context` | |
//! | `agent_thought_chunk`, other updates | skipped | |
//! | request `session/request_permission` | `permission.requested` | (the answer comes from the caller) |
//! | any other request (`fs/*`, `terminal/*` …) | a system `message` | a "method not found" error |
//! | result of `session/prompt` | `task.finished`; `task.failed` for `refusal`, `max_tokens`, `max_turn_requests`, and `cancelled` (ours ends as an interrupt) | |
//! | an error answering any of ours | `task.failed` (`auth_failed` for "authentication required") | |
//! | a line that is not JSON-RPC | `message` with the line, `task.failed` | |
//! | updates while `session/load` replays the history | skipped | |

mod tools;
mod words;

use std::collections::HashMap;

use runner_contract::event::{
    FailureKind, Message, MessageRole, PermissionRequested, TaskFailed, TaskFinished, TaskStarted,
};
use runner_contract::{AgentParser, EventBody};
use serde_json::{Value, json};

use crate::out::{self, Open};
use crate::wire::{
    self, Chunk, Incoming, InitializeResult, PermissionParams, Plan, PromptResult, RpcError,
    SessionOpened, ToolCall, UpdateParams, Usage, UsageUpdate,
};
use tools::Tool;
use words::{id_text, plan_text, system, without_nulls};

/// What the turn asks of the agent: where, what, and whether it continues a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnPlan {
    /// The worktree, the session's `cwd`.
    pub cwd: String,
    /// The prompt's text blocks (the repo notes first, when there are any).
    pub blocks: Vec<String>,
    /// The agent's session to continue.
    pub resume: Option<String>,
}

/// Where the turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `initialize` sent, not answered.
    Initializing,
    /// The session's opening sent, not answered.
    Opening(Open),
    /// `session/prompt` sent, not answered.
    Prompting,
    /// The prompt was answered, or the turn failed.
    Over,
}

/// Chunks of one message not yet given out: they end when something else comes.
#[derive(Debug)]
struct Said {
    role: MessageRole,
    message_id: Option<String>,
    text: String,
}

/// One ACP agent's output lines to events. One per turn.
#[derive(Debug)]
pub struct AcpParser {
    plan: Option<TurnPlan>,
    phase: Phase,
    session_id: Option<String>,
    owed: Vec<String>,
    said: Option<Said>,
    /// The agent's last message of this turn, the turn's result.
    last_text: Option<String>,
    tools: HashMap<String, Tool>,
    /// The tool calls in the order they came (for the ones cut short at the end).
    order: Vec<String>,
    /// The last plan given out, so the same plan again says nothing.
    last_plan: Option<String>,
    /// Whether the agent can continue the session in a later turn (its `initialize` offers
    /// `session/load` or `session/resume`).
    can_continue: Option<bool>,
    /// The session's cost in US dollars when the prompt was sent, and the latest.
    cost_before: Option<f64>,
    cost: Option<f64>,
    /// The context as the last `usage_update` said it: tokens in it, and its size.
    context: Option<(u64, u64)>,
    /// Whether a terminal event was given out.
    ended: bool,
    /// Whether any line came.
    seen: bool,
}

impl AcpParser {
    /// A parser that drives the turn `plan` describes.
    pub(crate) fn driving(plan: TurnPlan) -> Self {
        Self {
            plan: Some(plan),
            ..Self::reading()
        }
    }

    /// A parser that only reads (a recording's replay): it owes the agent nothing.
    pub(crate) fn reading() -> Self {
        Self {
            plan: None,
            phase: Phase::Initializing,
            session_id: None,
            owed: Vec::new(),
            said: None,
            last_text: None,
            tools: HashMap::new(),
            order: Vec::new(),
            last_plan: None,
            can_continue: None,
            cost_before: None,
            cost: None,
            context: None,
            ended: false,
            seen: false,
        }
    }

    fn owe(&mut self, line: String) {
        if self.plan.is_some() {
            self.owed.push(line);
        }
    }

    fn events_of(&mut self, line: &str) -> Vec<EventBody> {
        let incoming = match Incoming::read(line) {
            Ok(incoming) => incoming,
            Err(wire::NotJsonRpc) => return self.malformed(line),
        };
        match incoming {
            Incoming::Other => Vec::new(),
            Incoming::Response { id, outcome } => self.response(&id, outcome),
            Incoming::Request { id, method, params } => self.request(&id, &method, params),
            Incoming::Notification { method, params } if method == "session/update" => {
                self.update(params)
            }
            Incoming::Notification { .. } => Vec::new(),
        }
    }

    fn response(&mut self, id: &Value, outcome: Result<Value, RpcError>) -> Vec<EventBody> {
        let mut events = self.flush();
        match (id.as_u64(), self.phase) {
            (Some(out::INITIALIZE), Phase::Initializing) => {
                events.extend(self.initialized(outcome))
            }
            (Some(out::OPEN), Phase::Opening(how)) => events.extend(self.opened(how, outcome)),
            (Some(out::PROMPT), Phase::Prompting) => events.extend(self.answered(outcome)),
            // An answer to nothing we asked, or asked again: nothing to do.
            _ => {}
        }
        events
    }

    fn initialized(&mut self, outcome: Result<Value, RpcError>) -> Vec<EventBody> {
        let result: InitializeResult = match outcome {
            Ok(result) => serde_json::from_value(result).unwrap_or_default(),
            Err(error) => return self.refused("initialize", &error),
        };
        if let Some(version) = result
            .protocol_version
            .filter(|v| *v != wire::PROTOCOL_VERSION)
        {
            return self.fail(
                FailureKind::AgentError,
                format!(
                    "the agent speaks version {version} of the Agent Client Protocol and codehands \
                     speaks version {}: use a release of the agent that speaks it",
                    wire::PROTOCOL_VERSION
                ),
            );
        }
        let capabilities = &result.agent_capabilities;
        self.can_continue =
            Some(capabilities.load_session || capabilities.session_capabilities.resume.is_some());
        let Some(plan) = self.plan.clone() else {
            self.phase = Phase::Opening(Open::New);
            return Vec::new();
        };
        let how = match &plan.resume {
            None => Open::New,
            Some(_) if capabilities.session_capabilities.resume.is_some() => Open::Resume,
            Some(_) if capabilities.load_session => Open::Load,
            Some(_) => {
                return self.fail(
                    FailureKind::InvalidInput,
                    "this agent offers neither session/load nor session/resume (its initialize \
                     answer says so), so it cannot continue a conversation: approve or reject the \
                     session, or start a new one"
                        .into(),
                );
            }
        };
        self.phase = Phase::Opening(how);
        self.owe(out::open(how, &plan.cwd, plan.resume.as_deref()));
        Vec::new()
    }

    fn opened(&mut self, how: Open, outcome: Result<Value, RpcError>) -> Vec<EventBody> {
        let what = match how {
            Open::New => "session/new",
            Open::Load => "session/load",
            Open::Resume => "session/resume",
        };
        let opened: SessionOpened = match outcome {
            Ok(result) => serde_json::from_value(result).unwrap_or_default(),
            Err(error) => return self.refused(what, &error),
        };
        let resumed = self.plan.as_ref().and_then(|p| p.resume.clone());
        let Some(session_id) = opened.session_id.clone().or(resumed) else {
            return self.fail(
                FailureKind::AgentError,
                "the agent answered session/new without a sessionId: it does not speak the \
                 Agent Client Protocol as codehands does"
                    .into(),
            );
        };
        self.phase = Phase::Prompting;
        self.session_id = Some(session_id.clone());
        self.cost_before = self.cost;
        if let Some(plan) = &self.plan {
            let line = out::prompt(&session_id, &plan.blocks);
            self.owe(line);
        }
        vec![EventBody::TaskStarted(TaskStarted {
            model: opened.model(),
            agent_session_id: Some(session_id),
            cwd: self.plan.as_ref().map(|p| p.cwd.clone()),
            tools: Vec::new(),
            resumed: how != Open::New,
            can_continue: self.can_continue,
        })]
    }

    fn answered(&mut self, outcome: Result<Value, RpcError>) -> Vec<EventBody> {
        let result: PromptResult = match outcome {
            Ok(result) => serde_json::from_value(result).unwrap_or_default(),
            Err(error) => return self.refused("session/prompt", &error),
        };
        let why = match result.stop_reason.as_deref() {
            Some("refusal") => Some("the model refused to go on (stopReason refusal)"),
            Some("max_tokens") => Some(
                "the model reached its token limit (stopReason max_tokens): ask for less at once",
            ),
            Some("max_turn_requests") => Some(
                "the agent reached its limit of model requests for one turn (stopReason \
                 max_turn_requests): send a follow-up to go on",
            ),
            // Ours comes as an interrupt, whose turn the runner ends as interrupted whatever
            // the agent says; one nobody asked for is the agent giving up.
            Some("cancelled") => Some(
                "the agent ended its turn as cancelled (stopReason cancelled), though nobody \
                 cancelled it: its stderr may say why",
            ),
            _ => None,
        };
        let cost = self
            .cost
            .map(|now| (now - self.cost_before.unwrap_or(0.0)).max(0.0));
        if let Some(why) = why {
            self.phase = Phase::Over;
            self.ended = true;
            return vec![EventBody::TaskFailed(TaskFailed {
                reason: FailureKind::AgentError,
                message: why.to_owned(),
                stderr: None,
                exit_code: None,
                cost_usd: cost,
            })];
        }
        self.phase = Phase::Over;
        if self.ended {
            return Vec::new();
        }
        self.ended = true;
        let mut usage = result.usage.map(|u| self.usage(&u));
        if let Some((used, size)) = self.context {
            // The context as the agent last said it (ACP's `usage_update`).
            usage.get_or_insert_with(|| json!({}))["context"] =
                json!({ "used": used, "size": size });
        }
        vec![EventBody::TaskFinished(TaskFinished {
            result: self.last_text.clone(),
            cost_usd: cost,
            usage,
            ..TaskFinished::default()
        })]
    }

    /// Token counts in the keys the report reads, for a new session. ACP calls them the
    /// session's totals: for a continued session they would count earlier turns again, so
    /// they are kept apart (`sessionTotals`), where the report does not add them up.
    fn usage(&self, usage: &Usage) -> Value {
        let continued = self.plan.as_ref().is_some_and(|p| p.resume.is_some());
        let acp = json!({
            "totalTokens": usage.total_tokens,
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "thoughtTokens": usage.thought_tokens,
            "cachedReadTokens": usage.cached_read_tokens,
            "cachedWriteTokens": usage.cached_write_tokens,
        });
        let acp = without_nulls(acp);
        if continued {
            return json!({ "sessionTotals": acp });
        }
        let mut ours = json!({
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        });
        if let Some(cached) = usage.cached_read_tokens {
            // Read as OpenAI's usage: the cached tokens are part of the input already.
            ours["cached_input_tokens"] = json!(cached);
        }
        without_nulls(ours)
    }

    /// A request of ours answered with an error: the turn fails, saying what the agent said.
    fn refused(&mut self, what: &str, error: &RpcError) -> Vec<EventBody> {
        let detail = error
            .data
            .as_ref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        if error.code == wire::AUTH_REQUIRED {
            return self.fail(
                FailureKind::AuthFailed,
                format!(
                    "the agent needs a login before {what}: {}{detail}; log it in (or give it its \
                     API key) and start a new session",
                    error.message
                ),
            );
        }
        self.fail(
            FailureKind::AgentError,
            format!(
                "the agent answered {what} with an error (code {}): {}{detail}",
                error.code, error.message
            ),
        )
    }

    fn fail(&mut self, reason: FailureKind, message: String) -> Vec<EventBody> {
        self.phase = Phase::Over;
        if self.ended {
            return Vec::new();
        }
        self.ended = true;
        vec![EventBody::TaskFailed(TaskFailed {
            reason,
            message,
            stderr: None,
            exit_code: None,
            cost_usd: None,
        })]
    }

    /// A line that is no JSON-RPC message: the line is kept (as a message) and the turn
    /// fails, since nothing the agent says after it can be trusted to be read right.
    fn malformed(&mut self, line: &str) -> Vec<EventBody> {
        let mut events = self.flush();
        events.push(system(line.to_owned()));
        let mut excerpt: String = line.chars().take(120).collect();
        if excerpt.len() < line.len() {
            excerpt.push('…');
        }
        events.extend(self.fail(
            FailureKind::AgentError,
            format!(
                "the agent broke the Agent Client Protocol: it printed a line that is not a \
                 JSON-RPC message ({excerpt:?}); an ACP agent's stdout carries protocol messages \
                 only, so fix the agent or its configuration (its stderr may say more)"
            ),
        ));
        events
    }

    fn request(&mut self, id: &Value, method: &str, params: Value) -> Vec<EventBody> {
        let mut events = self.flush();
        if method != "session/request_permission" {
            self.owe(out::method_not_found(id, method));
            events.push(system(format!(
                "the agent asked for {method}, which codehands does not serve: it was told so"
            )));
            return events;
        }
        let asked: PermissionParams = serde_json::from_value(params).unwrap_or_default();
        let tool_call_id = asked.tool_call.tool_call_id.clone();
        let tool = self.tool(asked.tool_call);
        let name = tool.label();
        let shown = serde_json::to_value(&tool.call).unwrap_or(Value::Null);
        let request_id = if tool_call_id.is_empty() {
            format!("acp-{}", id_text(id))
        } else {
            tool_call_id.clone()
        };
        events.push(EventBody::PermissionRequested(PermissionRequested {
            request_id,
            tool: name,
            // What the answer needs: the request's id and the options, with the tool call.
            input: json!({ "rpcId": id, "toolCall": shown, "options": asked.options }),
            suggestions: None,
            tool_use_id: Some(tool_call_id).filter(|id| !id.is_empty()),
        }));
        events
    }

    /// The merged tool call `update` names, made if new.
    fn tool(&mut self, update: ToolCall) -> &mut Tool {
        let id = update.tool_call_id.clone();
        if !self.tools.contains_key(&id) {
            self.order.push(id.clone());
        }
        let tool = self.tools.entry(id).or_default();
        tool.merge(update);
        tool
    }

    fn update(&mut self, params: Value) -> Vec<EventBody> {
        let params: UpdateParams = serde_json::from_value(params).unwrap_or_default();
        let kind = params
            .update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if kind == "usage_update" {
            let usage: UsageUpdate = serde_json::from_value(params.update).unwrap_or_default();
            if let (Some(used), Some(size)) = (usage.used, usage.size)
                && size > 0
            {
                self.context = Some((used, size));
            }
            if let Some(cost) = usage.cost
                && cost.currency.is_some_and(|c| c.eq_ignore_ascii_case("USD"))
                && let Some(amount) = cost.amount.filter(|a| a.is_finite())
            {
                self.cost = Some(amount);
            }
            return Vec::new();
        }
        if self.phase == Phase::Opening(Open::Load) {
            // The history of the session, replayed: it happened in earlier turns.
            return Vec::new();
        }
        let role = match kind.as_str() {
            "agent_message_chunk" => Some(MessageRole::Assistant),
            "user_message_chunk" => Some(MessageRole::User),
            _ => None,
        };
        if let Some(role) = role {
            let chunk: Chunk = serde_json::from_value(params.update).unwrap_or_default();
            return self.chunk(role, chunk);
        }
        if kind == "agent_thought_chunk" {
            return Vec::new();
        }
        let mut events = self.flush();
        match kind.as_str() {
            "tool_call" | "tool_call_update" => {
                if let Ok(update) = serde_json::from_value::<ToolCall>(params.update) {
                    events.extend(self.tool(update).events());
                }
            }
            "plan" => {
                let plan: Plan = serde_json::from_value(params.update).unwrap_or_default();
                let text = plan_text(&plan);
                if self.last_plan.as_ref() != Some(&text) {
                    self.last_plan = Some(text.clone());
                    events.push(EventBody::Message(Message {
                        text,
                        ..Message::default()
                    }));
                }
            }
            _ => {}
        }
        events
    }

    fn chunk(&mut self, role: MessageRole, chunk: Chunk) -> Vec<EventBody> {
        let same = self.said.as_ref().is_some_and(|said| {
            said.role == role
                && (said.message_id == chunk.message_id
                    || said.message_id.is_none()
                    || chunk.message_id.is_none())
        });
        let events = if same { Vec::new() } else { self.flush() };
        let said = self.said.get_or_insert_with(|| Said {
            role,
            message_id: chunk.message_id.clone(),
            text: String::new(),
        });
        said.text.push_str(&chunk.content.words());
        events
    }

    /// The message whose chunks came so far, if any.
    fn flush(&mut self) -> Vec<EventBody> {
        let Some(said) = self.said.take() else {
            return Vec::new();
        };
        let text = match said.role {
            MessageRole::User => words::without_notes(self.plan.as_ref(), &said.text),
            _ => said.text,
        };
        if text.trim().is_empty() {
            return Vec::new();
        }
        let said = Said { text, ..said };
        if said.role == MessageRole::Assistant {
            self.last_text = Some(said.text.clone());
        }
        vec![EventBody::Message(Message {
            text: said.text,
            role: said.role,
            ..Message::default()
        })]
    }
}

impl AgentParser for AcpParser {
    fn parse_line(&mut self, line: &str) -> Vec<EventBody> {
        if line.trim().is_empty() {
            return Vec::new();
        }
        self.seen = true;
        self.events_of(line)
    }

    fn owed_input(&mut self) -> Vec<String> {
        std::mem::take(&mut self.owed)
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<EventBody> {
        let mut events = self.flush();
        for id in self.order.clone() {
            if let Some(tool) = self.tools.get_mut(&id) {
                events.extend(tool.cut_short());
            }
        }
        if !self.seen || self.ended {
            return events;
        }
        let when = match self.phase {
            Phase::Initializing => "before it answered initialize",
            Phase::Opening(_) => "before it opened a session",
            Phase::Prompting | Phase::Over => "before it answered session/prompt",
        };
        let code = exit_code.map_or("no exit code".to_owned(), |c| format!("exit code {c}"));
        events.extend(self.fail(
            FailureKind::NoResult,
            format!("the agent exited ({code}) {when}: its stderr says why"),
        ));
        events
    }
}

#[cfg(test)]
mod tests;
