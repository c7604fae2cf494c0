//! Workflows as data (issue 30, "Phases"): a TOML file of phases, each with its agent, model,
//! prompt template, permissions and gate, read strictly like an agent profile. This is the
//! format and its checks only: running the phases (plan, implement, review by another agent,
//! findings back to the implementer) is not built yet, and nothing here starts anything.
//!
//! ```toml
//! name = "plan-code-review"
//! rounds = 2                       # review rounds at most before approval is asked
//! [[phase]]
//! name = "plan"
//! kind = "plan"                    # plan | implement | review
//! agent = "claude-code"
//! model = "sonnet"                 # optional: the agent's default otherwise
//! permissions = "read-only"        # read-only | edit; a plan or a review is always read-only
//! prompt = ["Plan this task, change nothing:", "{task}"]
//! ```
//!
//! Prompt elements are joined with blank lines; a placeholder (`{task}`, `{previous}`, the
//! previous phase's text, `{diff}`, `{findings}`) is replaced only when it is a whole element,
//! so text an agent wrote is never read as a template.

use std::path::Path;

use runner_core::{AgentName, Error, Result};
use serde::Deserialize;

/// The largest workflow file read, in bytes.
const MAX_WORKFLOW_BYTES: u64 = 64 * 1024;

/// The placeholders a prompt element may be.
const PLACEHOLDERS: &[&str] = &["{task}", "{previous}", "{diff}", "{findings}"];

/// The built-in workflow `plan-code-review`: Claude Code plans (read-only) and implements,
/// Codex, of another vendor, reviews the diff read-only; findings go back at most twice.
pub const PLAN_CODE_REVIEW: &str = r#"
name = "plan-code-review"
rounds = 2

[[phase]]
name = "plan"
kind = "plan"
agent = "claude-code"
permissions = "read-only"
prompt = ["Read the repository and write a short plan for this task. Change no file.", "{task}"]

[[phase]]
name = "implement"
kind = "implement"
agent = "claude-code"
permissions = "edit"
prompt = ["Do this task:", "{task}", "Follow this plan:", "{previous}", "Fix these review findings first, if any:", "{findings}"]

[[phase]]
name = "review"
kind = "review"
agent = "codex"
permissions = "read-only"
gate = { max-severity = "minor" }
prompt = ["Review this change for the task below. Change no file. Answer only with JSON: {\"findings\": [{\"file\", \"line\", \"severity\": \"minor|major|critical\", \"text\"}]}.", "{task}", "{diff}"]
"#;

/// A workflow, checked.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// Its name (the file's stem for one in `$CODEHANDS_HOME/workflows/`).
    pub name: String,
    /// How many review rounds at most before approval is asked.
    #[serde(default = "default_rounds")]
    pub rounds: u32,
    /// The phases, in order.
    #[serde(rename = "phase")]
    pub phases: Vec<Phase>,
}

fn default_rounds() -> u32 {
    2
}

/// What a phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    /// Reads and writes a plan; changes nothing.
    Plan,
    /// Changes the worktree.
    Implement,
    /// Reads the diff and answers findings as JSON; changes nothing.
    Review,
}

/// What a phase's agent may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhasePermissions {
    /// Read-only tools only.
    ReadOnly,
    /// The agent's usual tools, edits included.
    Edit,
}

/// How severe a review finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// A nit.
    Minor,
    /// Should be fixed.
    Major,
    /// Must be fixed.
    Critical,
}

/// When a phase lets the workflow go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Gate {
    /// The sandbox's tests must pass (`--verify`).
    #[serde(default)]
    pub verify: bool,
    /// No finding above this severity.
    #[serde(default)]
    pub max_severity: Option<Severity>,
}

/// One phase.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
}

impl Workflow {
    /// Reads and checks the workflow at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let meta =
            std::fs::metadata(path).map_err(|e| refuse(path, &format!("cannot be read ({e})")))?;
        if !meta.is_file() || meta.len() > MAX_WORKFLOW_BYTES {
            return Err(refuse(
                path,
                &format!("is not a TOML file of at most {MAX_WORKFLOW_BYTES} bytes"),
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| refuse(path, &format!("cannot be read ({e})")))?;
        Self::parse(&text, path)
    }

    /// The built-in workflow of `name`, if there is one.
    pub fn built_in(name: &str) -> Option<Self> {
        (name == "plan-code-review").then(|| {
            Self::parse(PLAN_CODE_REVIEW, Path::new("(built-in plan-code-review)"))
                .expect("the built-in workflow is valid")
        })
    }

    /// Parses and checks `text` as read from `path` (which errors name).
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let workflow: Workflow = toml::from_str(text).map_err(|e| {
            refuse(
                path,
                &format!(
                    "{}: fix the file (codehands/src/workflow.rs lists the keys)",
                    e.to_string().trim_end()
                ),
            )
        })?;
        workflow.check(path)?;
        Ok(workflow)
    }

    fn check(&self, path: &Path) -> Result<()> {
        if self.phases.is_empty() {
            return Err(refuse(path, "has no [[phase]]: give it at least one"));
        }
        if self.rounds == 0 || self.rounds > 10 {
            return Err(refuse(path, "rounds must be 1 to 10"));
        }
        let mut names: Vec<&str> = self.phases.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(refuse(
                path,
                "names two phases alike: give each its own name",
            ));
        }
        for phase in &self.phases {
            phase.check(path)?;
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
                path,
                &format!(
                    "phase {:?} reviews with {}, which also implements: a review is by another \
                     agent",
                    review.name, review.agent
                ),
            ));
        }
        Ok(())
    }
}

impl Phase {
    fn check(&self, path: &Path) -> Result<()> {
        if self.kind != PhaseKind::Implement && self.permissions == PhasePermissions::Edit {
            return Err(refuse(
                path,
                &format!(
                    "phase {:?} is a {} phase given edit permissions: a plan or a review reads \
                     only; set permissions = \"read-only\"",
                    self.name,
                    if self.kind == PhaseKind::Plan {
                        "plan"
                    } else {
                        "review"
                    }
                ),
            ));
        }
        if self.prompt.is_empty() {
            return Err(refuse(
                path,
                &format!("phase {:?} has no prompt", self.name),
            ));
        }
        for element in &self.prompt {
            let whole = PLACEHOLDERS.contains(&element.as_str());
            let inside = PLACEHOLDERS.iter().any(|p| element.contains(p));
            if inside && !whole {
                return Err(refuse(
                    path,
                    &format!(
                        "phase {:?}: a placeholder must be a whole prompt element, not inside \
                         {element:?}: split it into its own element",
                        self.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn refuse(path: &Path, why: &str) -> Error {
    Error::invalid_input(format!("the workflow {} {why}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Workflow> {
        Workflow::parse(text, Path::new("w.toml"))
    }

    #[test]
    fn the_built_in_plans_implements_and_reviews_by_another_agent() {
        let w = Workflow::built_in("plan-code-review").unwrap();
        let kinds: Vec<PhaseKind> = w.phases.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [PhaseKind::Plan, PhaseKind::Implement, PhaseKind::Review]
        );
        assert_ne!(w.phases[1].agent, w.phases[2].agent);
        assert!(Workflow::built_in("nope").is_none());
    }

    #[test]
    fn an_unknown_key_a_writing_review_and_a_placeholder_inside_text_are_refused() {
        let review = |extra: &str, permissions: &str, prompt: &str| {
            format!(
                "name = \"w\"\n{extra}[[phase]]\nname = \"r\"\nkind = \"review\"\nagent = \"codex\"\n\
                 permissions = \"{permissions}\"\nprompt = [{prompt}]\n"
            )
        };
        parse(&review("", "read-only", "\"{diff}\"")).unwrap();
        let unknown = parse(&review("colour = 1\n", "read-only", "\"{diff}\"")).unwrap_err();
        assert!(unknown.to_string().contains("colour"), "{unknown}");
        let writes = parse(&review("", "edit", "\"{diff}\"")).unwrap_err();
        assert!(writes.to_string().contains("read-only"), "{writes}");
        let inside = parse(&review("", "read-only", "\"see {diff}\"")).unwrap_err();
        assert!(
            inside.to_string().contains("whole prompt element"),
            "{inside}"
        );
    }
}
