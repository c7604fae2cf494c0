//! Workflows as data (issue 30, "Phases"): phases, each with its agent, model, prompt
//! template, permissions and gate; what a caller passes to run one (`WorkflowOptions`); a
//! reviewer's findings and how its answer is read. The facade reads workflow files (TOML,
//! strictly) into these types; runner-core's `LocalRunner::run_workflow` runs them.
//!
//! Prompt elements are joined with blank lines; a placeholder (`{task}`, `{previous}` the
//! previous phase's final text, `{diff}` the worktree's diff against the base, `{findings}`
//! the last review's findings) is replaced only when it is a whole element, so text an agent
//! wrote is never read as a template.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_name::AgentName;
use crate::error::{Error, Result};
use crate::ids::SessionId;
use crate::options::Isolation;

/// The placeholders a prompt element may be.
pub const PLACEHOLDERS: &[&str] = &["{task}", "{previous}", "{diff}", "{findings}"];

/// The most review rounds a workflow may ask for.
pub const MAX_ROUNDS: u32 = 10;

/// The most phases a workflow may have.
pub const MAX_PHASES: usize = 16;

/// A workflow, checked with [`Workflow::check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// Its name (the file's stem for one in `$CODEHANDS_HOME/workflows/`).
    pub name: String,
    /// How many review rounds at most before approval is asked.
    #[serde(default = "default_rounds")]
    pub rounds: u32,
    /// Every phase's wall-clock limit (`10m`, `90s`), unless the phase names its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The phases, in order.
    #[serde(rename = "phase")]
    pub phases: Vec<Phase>,
}

fn default_rounds() -> u32 {
    2
}

/// What a phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    /// Reads and writes a plan; changes nothing.
    Plan,
    /// Changes the worktree.
    Implement,
    /// Reads the diff and answers findings as JSON; changes nothing.
    Review,
}

impl PhaseKind {
    /// `plan`, `implement` or `review`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Implement => "implement",
            Self::Review => "review",
        }
    }
}

/// What a phase's agent may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PhasePermissions {
    /// Read-only tools only.
    ReadOnly,
    /// The agent's usual tools, edits included.
    Edit,
}

/// How severe a review finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// A nit.
    Minor,
    /// Should be fixed.
    Major,
    /// Must be fixed.
    Critical,
}

impl Severity {
    /// `minor`, `major` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minor => "minor",
            Self::Major => "major",
            Self::Critical => "critical",
        }
    }
}

/// When a phase lets the workflow go on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Gate {
    /// The sandbox's tests must pass after the phase (`verify`); a failing verdict fails
    /// the session.
    #[serde(default)]
    pub verify: bool,
    /// For a review: no finding above this severity, or the findings go back to the
    /// implement phase before it.
    #[serde(default)]
    pub max_severity: Option<Severity>,
}

/// One phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Its name, unique in the workflow.
    pub name: String,
    /// What it does.
    pub kind: PhaseKind,
    /// The agent, by name.
    pub agent: AgentName,
    /// The model, in the agent's naming.
    #[serde(default)]
    pub model: Option<String>,
    /// What the agent may do.
    pub permissions: PhasePermissions,
    /// The prompt's elements (text, or a whole placeholder).
    pub prompt: Vec<String>,
    /// The gate.
    #[serde(default)]
    pub gate: Option<Gate>,
    /// The phase's wall-clock limit (`10m`, `90s`): its turn still running after it fails
    /// with reason `timeout`, the change kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

impl Phase {
    /// Whether the phase's agent may only read.
    pub fn read_only(&self) -> bool {
        self.permissions == PhasePermissions::ReadOnly
    }

    /// The phase's prompt with each whole-element placeholder replaced by `fill`'s value.
    pub fn render(&self, fill: impl Fn(&str) -> String) -> String {
        self.prompt
            .iter()
            .map(|element| {
                if PLACEHOLDERS.contains(&element.as_str()) {
                    fill(element)
                } else {
                    element.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn check(&self, source: &str) -> Result<()> {
        if self.name.trim().is_empty() || self.name.len() > 64 {
            return Err(refuse(
                source,
                "has a phase whose name is empty or over 64 bytes",
            ));
        }
        if self.kind != PhaseKind::Implement && self.permissions == PhasePermissions::Edit {
            return Err(refuse(
                source,
                &format!(
                    "gives the {} phase {:?} write tools (permissions = \"edit\"): a plan or a \
                     review reads only; set permissions = \"read-only\"",
                    self.kind.as_str(),
                    self.name,
                ),
            ));
        }
        if self.prompt.is_empty() {
            return Err(refuse(
                source,
                &format!("phase {:?} has no prompt", self.name),
            ));
        }
        if let Some(timeout) = &self.timeout {
            crate::options::parse_timeout(timeout)
                .map_err(|e| refuse(source, &format!("phase {:?}: {}", self.name, e.message())))?;
        }
        for element in &self.prompt {
            if looks_like_placeholder(element) && !PLACEHOLDERS.contains(&element.as_str()) {
                return Err(refuse(
                    source,
                    &format!(
                        "phase {:?}: {element:?} is no placeholder: the known ones are {}",
                        self.name,
                        PLACEHOLDERS.join(", ")
                    ),
                ));
            }
            let whole = PLACEHOLDERS.contains(&element.as_str());
            let inside = PLACEHOLDERS.iter().any(|p| element.contains(p));
            if inside && !whole {
                return Err(refuse(
                    source,
                    &format!(
                        "phase {:?}: a placeholder must be a whole prompt element, not inside \
                         {element:?}: split it into its own element",
                        self.name
                    ),
                ));
            }
        }
        if self
            .gate
            .is_some_and(|g| g.max_severity.is_some() && self.kind != PhaseKind::Review)
        {
            return Err(refuse(
                source,
                &format!(
                    "phase {:?} has a max-severity gate but is no review: only a review's \
                     findings have a severity",
                    self.name
                ),
            ));
        }
        Ok(())
    }
}

impl Workflow {
    /// Checks the workflow as read from `source` (a path or a name, which errors name): at
    /// least one phase, unique names, rounds 1 to [`MAX_ROUNDS`], a plan or a review never
    /// given write tools, placeholders whole, every review after an implement phase and by
    /// another agent than any implementer.
    pub fn check(&self, source: &str) -> Result<()> {
        if self.phases.is_empty() || self.phases.len() > MAX_PHASES {
            return Err(refuse(
                source,
                &format!("must have 1 to {MAX_PHASES} [[phase]] tables"),
            ));
        }
        if self.rounds == 0 || self.rounds > MAX_ROUNDS {
            return Err(refuse(source, &format!("rounds must be 1 to {MAX_ROUNDS}")));
        }
        if let Some(timeout) = &self.timeout {
            crate::options::parse_timeout(timeout).map_err(|e| refuse(source, e.message()))?;
        }
        let mut names: Vec<&str> = self.phases.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(refuse(
                source,
                "names two phases alike: give each its own name",
            ));
        }
        for phase in &self.phases {
            phase.check(source)?;
        }
        let implementers: Vec<&AgentName> = self
            .phases
            .iter()
            .filter(|p| p.kind == PhaseKind::Implement)
            .map(|p| &p.agent)
            .collect();
        if let Some(review) = self
            .phases
            .iter()
            .find(|p| p.kind == PhaseKind::Review && implementers.contains(&&p.agent))
        {
            return Err(refuse(
                source,
                &format!(
                    "phase {:?} reviews with {}, which also implements: a review is by another \
                     agent",
                    review.name, review.agent
                ),
            ));
        }
        for (i, phase) in self.phases.iter().enumerate() {
            if phase.kind == PhaseKind::Review && self.implement_before(i).is_none() {
                return Err(refuse(
                    source,
                    &format!(
                        "phase {:?} reviews before any implement phase: put an implement phase \
                         first",
                        phase.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The wall-clock limit of phase `index`'s turns in milliseconds: its own, else the
    /// workflow's, else `fallback` (the caller's `--timeout`). Checked by [`Workflow::check`].
    pub fn timeout_ms(&self, index: usize, fallback: Option<u64>) -> Option<u64> {
        self.phases
            .get(index)
            .and_then(|p| p.timeout.as_deref())
            .or(self.timeout.as_deref())
            .and_then(|t| crate::options::parse_timeout(t).ok())
            .or(fallback)
    }

    /// The index of the last implement phase before phase `index`: where a review's
    /// findings go back to.
    pub fn implement_before(&self, index: usize) -> Option<usize> {
        self.phases[..index.min(self.phases.len())]
            .iter()
            .rposition(|p| p.kind == PhaseKind::Implement)
    }

    /// The most turns the workflow can take: each phase once, and for each review every
    /// round after the first runs again from its implement phase through the review.
    pub fn max_turns(&self) -> u32 {
        let again: usize = self
            .phases
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == PhaseKind::Review)
            .filter_map(|(i, _)| self.implement_before(i).map(|from| i - from + 1))
            .sum();
        (self.phases.len() + again * (self.rounds.saturating_sub(1) as usize)) as u32
    }
}

/// What `LocalRunner::run_workflow` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowOptions {
    /// The caller's id for the session every phase is a turn of.
    pub session_id: SessionId,
    /// The person's repository.
    pub repo_path: PathBuf,
    /// The task, `{task}` in the phases' prompts.
    pub prompt: String,
    /// The workflow, checked.
    pub workflow: Workflow,
    /// The budget of the whole workflow in US dollars, split evenly over the most turns it
    /// can take ([`Workflow::max_turns`]); the default budget per turn when absent.
    pub budget_usd: Option<f64>,
    /// Every phase's isolation.
    pub isolation: Isolation,
    /// Each phase's wall-clock limit in milliseconds when neither the phase nor the
    /// workflow names one (`--timeout`).
    pub timeout_ms: Option<u64>,
}

/// One finding of a review, as the reviewer answered it and as `review.finding` carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Finding {
    /// The file, relative to the repository.
    pub file: String,
    /// The line, when the reviewer names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// How severe it is.
    pub severity: Severity,
    /// What is wrong, and what to do.
    pub text: String,
}

/// The largest review answer read, in bytes.
pub const MAX_REVIEW_BYTES: usize = 256 * 1024;
/// The most findings one review may return.
pub const MAX_FINDINGS: usize = 100;
/// The longest text of a finding (and of its file), in bytes.
pub const MAX_FINDING_BYTES: usize = 8 * 1024;

/// The answer a reviewer is asked for: `{"findings": [...]}`, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewAnswer {
    findings: Vec<Finding>,
}

/// Reads a reviewer's final text as its findings: one JSON object `{"findings": [...]}`,
/// alone or in a ```json fence, checked strictly (no unknown key, a known severity, bounded
/// sizes). Anything else is an error that says what was wrong, never an empty list.
pub fn parse_findings(text: &str) -> Result<Vec<Finding>> {
    if text.len() > MAX_REVIEW_BYTES {
        return Err(Error::invalid_input(format!(
            "the review's answer is {} bytes, over {MAX_REVIEW_BYTES}",
            text.len()
        )));
    }
    let json = json_object_in(text).ok_or_else(|| {
        Error::invalid_input(
            "the review's answer holds no JSON object {\"findings\": [...]}".to_owned(),
        )
    })?;
    let answer: ReviewAnswer = serde_json::from_str(json).map_err(|e| {
        Error::invalid_input(format!(
            "the review's answer is not {{\"findings\": [{{\"file\", \"line\", \"severity\", \
             \"text\"}}]}}: {e}"
        ))
    })?;
    if answer.findings.len() > MAX_FINDINGS {
        return Err(Error::invalid_input(format!(
            "the review returned {} findings, over {MAX_FINDINGS}",
            answer.findings.len()
        )));
    }
    for finding in &answer.findings {
        if finding.text.trim().is_empty()
            || finding.text.len() > MAX_FINDING_BYTES
            || finding.file.len() > MAX_FINDING_BYTES
        {
            return Err(Error::invalid_input(format!(
                "a finding's text is empty or over {MAX_FINDING_BYTES} bytes"
            )));
        }
    }
    Ok(answer.findings)
}

/// The JSON object of a reviewer's text: the body of its first ```json fence (or plain
/// ``` fence) when it has one, else from the first `{` to the last `}`.
fn json_object_in(text: &str) -> Option<&str> {
    let fenced = text.find("```").and_then(|start| {
        let after = &text[start + 3..];
        let body_start = after.find('\n')? + 1;
        let body = &after[body_start..];
        let end = body.find("```")?;
        Some(body[..end].trim())
    });
    let candidate = fenced.unwrap_or(text);
    let start = candidate.find('{')?;
    let end = candidate.rfind('}')?;
    (start < end).then(|| &candidate[start..=end])
}

/// Findings as text for a prompt's `{findings}`: one line each, `(none)` when there are none.
pub fn findings_text(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "(none)".into();
    }
    findings
        .iter()
        .map(|f| match f.line {
            Some(line) => format!("- {}:{line} [{}] {}", f.file, f.severity.as_str(), f.text),
            None => format!("- {} [{}] {}", f.file, f.severity.as_str(), f.text),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A whole prompt element written like a placeholder (`{taks}`): one word in braces.
fn looks_like_placeholder(element: &str) -> bool {
    element
        .strip_prefix('{')
        .and_then(|e| e.strip_suffix('}'))
        .is_some_and(|word| {
            !word.is_empty()
                && word.len() <= 32
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

fn refuse(source: &str, why: &str) -> Error {
    Error::invalid_input(format!("the workflow {source} {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_read_strictly_from_plain_or_fenced_json() {
        let plain = r#"{"findings": [{"file": "a.js", "line": 3, "severity": "major", "text": "off by one"}]}"#;
        let found = parse_findings(plain).unwrap();
        assert_eq!(found[0].severity, Severity::Major);
        assert_eq!(found[0].line, Some(3));
        let fenced = format!("Here is my review:\n```json\n{plain}\n```\nDone.");
        assert_eq!(parse_findings(&fenced).unwrap(), found);
        assert!(parse_findings(r#"{"findings": []}"#).unwrap().is_empty());
        for bad in [
            "looks fine to me",
            r#"{"findings": [{"file": "a", "severity": "huge", "text": "x"}]}"#,
            r#"{"findings": [], "verdict": "ok"}"#,
            r#"{"findings": [{"file": "a", "severity": "minor", "text": "x", "fix": 1}]}"#,
            r#"{"issues": []}"#,
            r#"{"findings": [{"file": "a", "severity": "minor", "text": " "}]}"#,
        ] {
            assert!(parse_findings(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn max_turns_counts_every_round_after_the_first() {
        let phase = |name: &str, kind, agent: &str| Phase {
            name: name.into(),
            kind,
            agent: AgentName::parse(agent).unwrap(),
            model: None,
            permissions: if kind == PhaseKind::Implement {
                PhasePermissions::Edit
            } else {
                PhasePermissions::ReadOnly
            },
            prompt: vec!["{task}".into()],
            gate: None,
            timeout: None,
        };
        let w = Workflow {
            name: "w".into(),
            rounds: 2,
            timeout: None,
            phases: vec![
                phase("plan", PhaseKind::Plan, "a"),
                phase("implement", PhaseKind::Implement, "a"),
                phase("review", PhaseKind::Review, "b"),
            ],
        };
        w.check("w").unwrap();
        assert_eq!(w.max_turns(), 5);
        let mut early = w.clone();
        early.phases.swap(1, 2);
        assert!(early.check("w").is_err(), "a review before any implement");
        let mut timed = w.clone();
        timed.timeout = Some("10m".into());
        timed.phases[2].timeout = Some("90s".into());
        timed.check("w").unwrap();
        assert_eq!(timed.timeout_ms(0, Some(5_000)), Some(600_000));
        assert_eq!(timed.timeout_ms(2, None), Some(90_000));
        assert_eq!(w.timeout_ms(1, Some(5_000)), Some(5_000));
        timed.phases[0].timeout = Some("soon".into());
        let refused = timed.check("w").unwrap_err();
        assert!(refused.message().contains("\"soon\""), "{refused}");
    }

    #[test]
    fn a_misspelt_placeholder_is_refused_with_the_known_names() {
        let mut phase = Phase {
            name: "p".into(),
            kind: PhaseKind::Plan,
            agent: AgentName::parse("a").unwrap(),
            model: None,
            permissions: PhasePermissions::ReadOnly,
            prompt: vec!["Task:".into(), "{taks}".into()],
            gate: None,
            timeout: None,
        };
        let refused = phase.check("w").unwrap_err();
        assert!(refused.message().contains("{taks}"), "{refused}");
        assert!(
            refused.message().contains("{task}, {previous}"),
            "{refused}"
        );
        phase.prompt = vec![
            "Use {braces} in JSON like {\"a\": 1}".into(),
            "{task}".into(),
        ];
        phase.check("w").unwrap();
    }

    #[test]
    fn placeholders_are_replaced_only_as_whole_elements() {
        let phase = Phase {
            name: "p".into(),
            kind: PhaseKind::Plan,
            agent: AgentName::parse("a").unwrap(),
            model: None,
            permissions: PhasePermissions::ReadOnly,
            prompt: vec!["Task:".into(), "{task}".into()],
            gate: None,
            timeout: None,
        };
        let text = phase.render(|p| {
            if p == "{task}" {
                "do {diff}".into()
            } else {
                String::new()
            }
        });
        assert_eq!(text, "Task:\n\ndo {diff}");
    }
}
