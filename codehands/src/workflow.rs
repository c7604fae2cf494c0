//! Workflow files: where a workflow is found and how its TOML is read (strictly, like an
//! agent profile). The types, their checks and the reviewer's findings are the contract's
//! (`runner_core::workflow`); runner-core runs a workflow (`LocalRunner::run_workflow`).
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
//! gate = { max-severity = "minor" } # a review's findings above it go back; verify = true
//! ```

use std::path::Path;

use runner_contract::{Error, Home, Result};

pub use runner_contract::workflow::Workflow;

/// The largest workflow file read, in bytes.
const MAX_WORKFLOW_BYTES: u64 = 64 * 1024;

/// The built-in workflow `plan-code-review`: Claude Code plans (read-only) and implements,
/// Codex, of another vendor, reviews the diff read-only; findings above `minor` go back to
/// the implementer, at most twice in all.
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
prompt = ["Review this change for the task below. Change no file. Answer only with JSON: {\"findings\": [{\"file\": \"path\", \"line\": 1, \"severity\": \"minor|major|critical\", \"text\": \"what is wrong\"}]}, with an empty list when nothing is wrong.", "{task}", "{diff}"]
"#;

/// The names of the built-in workflows.
pub const BUILT_IN: &[&str] = &["plan-code-review"];

/// The workflow `name_or_file` names: a file when it holds a `/` or ends in `.toml`, else a
/// built-in, else `$CODEHANDS_HOME/workflows/<name>.toml`.
pub fn find(name_or_file: &str, home: &Home) -> Result<Workflow> {
    if name_or_file.contains('/') || name_or_file.ends_with(".toml") {
        return read(Path::new(name_or_file));
    }
    if let Some(workflow) = built_in(name_or_file) {
        return Ok(workflow);
    }
    let plain = !name_or_file.is_empty()
        && name_or_file.len() <= 64
        && name_or_file
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return Err(Error::invalid_input(format!(
            "{name_or_file:?} names no workflow: give a file (a path, or a name ending in \
             .toml) or a name of letters, digits, `-` and `_`"
        )));
    }
    let path = home.workflows_dir().join(format!("{name_or_file}.toml"));
    if !path.exists() {
        return Err(Error::not_found(format!(
            "no workflow {name_or_file:?}: the built-in ones are {}, and {} has no such file",
            BUILT_IN.join(", "),
            path.display()
        )));
    }
    read(&path)
}

/// Reads and checks the workflow file at `path` (never through a link to something that
/// is not a file, at most [`MAX_WORKFLOW_BYTES`]).
pub fn read(path: &Path) -> Result<Workflow> {
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
    parse(&text, &path.display().to_string())
}

/// The built-in workflow of `name`, if there is one.
pub fn built_in(name: &str) -> Option<Workflow> {
    (name == "plan-code-review").then(|| {
        parse(PLAN_CODE_REVIEW, "(built-in plan-code-review)")
            .expect("the built-in workflow is valid")
    })
}

/// Parses and checks `text` as read from `source` (which errors name).
pub fn parse(text: &str, source: &str) -> Result<Workflow> {
    let workflow: Workflow = toml::from_str(text).map_err(|e| {
        Error::invalid_input(format!(
            "the workflow {source} {}: fix the file (README.md, \"Workflows\", lists the keys)",
            e.to_string().trim_end()
        ))
    })?;
    workflow.check(source)?;
    Ok(workflow)
}

fn refuse(path: &Path, why: &str) -> Error {
    Error::invalid_input(format!("the workflow {} {why}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::workflow::PhaseKind;

    fn parse_here(text: &str) -> Result<Workflow> {
        parse(text, "w.toml")
    }

    #[test]
    fn the_built_in_plans_implements_and_reviews_by_another_agent() {
        let w = built_in("plan-code-review").unwrap();
        let kinds: Vec<PhaseKind> = w.phases.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [PhaseKind::Plan, PhaseKind::Implement, PhaseKind::Review]
        );
        assert_ne!(w.phases[1].agent, w.phases[2].agent);
        assert_eq!(w.max_turns(), 5);
        assert!(built_in("nope").is_none());
    }

    #[test]
    fn an_unknown_key_a_writing_review_and_a_placeholder_inside_text_are_refused() {
        let review = |extra: &str, permissions: &str, prompt: &str| {
            format!(
                "name = \"w\"\n{extra}[[phase]]\nname = \"i\"\nkind = \"implement\"\nagent = \"a\"\n\
                 permissions = \"edit\"\nprompt = [\"{{task}}\"]\n\
                 [[phase]]\nname = \"r\"\nkind = \"review\"\nagent = \"codex\"\n\
                 permissions = \"{permissions}\"\nprompt = [{prompt}]\n"
            )
        };
        parse_here(&review("", "read-only", "\"{diff}\"")).unwrap();
        let unknown = parse_here(&review("colour = 1\n", "read-only", "\"{diff}\"")).unwrap_err();
        assert!(unknown.to_string().contains("colour"), "{unknown}");
        let writes = parse_here(&review("", "edit", "\"{diff}\"")).unwrap_err();
        assert!(writes.to_string().contains("write tools"), "{writes}");
        let inside = parse_here(&review("", "read-only", "\"see {diff}\"")).unwrap_err();
        assert!(
            inside.to_string().contains("whole prompt element"),
            "{inside}"
        );
    }

    #[test]
    fn a_name_is_a_built_in_or_a_file_in_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        assert_eq!(
            find("plan-code-review", &home).unwrap().name,
            "plan-code-review"
        );
        assert!(
            find("mine", &home)
                .unwrap_err()
                .to_string()
                .contains("no workflow")
        );
        assert!(find("../x", &home).is_err());
        std::fs::create_dir_all(home.workflows_dir()).unwrap();
        std::fs::write(home.workflows_dir().join("mine.toml"), PLAN_CODE_REVIEW).unwrap();
        assert_eq!(find("mine", &home).unwrap().name, "plan-code-review");
    }
}
