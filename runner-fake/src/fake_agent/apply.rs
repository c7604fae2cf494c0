//! Performing a recording's file tools in the working folder.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Performs the Write, Edit and MultiEdit calls of one assistant line.
pub fn tool_uses(line: &Value, cwd: &Path) -> Result<(), String> {
    let Some(blocks) = line.pointer("/message/content").and_then(Value::as_array) else {
        return Ok(());
    };
    for block in blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
    {
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        match block.get("name").and_then(Value::as_str) {
            Some("Write") => write(&input, cwd)?,
            Some("Edit") => edit(&target(&input, cwd)?, &input)?,
            Some("MultiEdit") => {
                let path = target(&input, cwd)?;
                for one in input
                    .get("edits")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    edit(&path, one)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The file a tool names, which must lie inside the working folder: lexically, and once
/// every symbolic link on the way is resolved (a link committed in the repo may point
/// anywhere). The file itself must not be a link either, even a dangling one.
fn target(input: &Value, cwd: &Path) -> Result<PathBuf, String> {
    let path = input
        .get("file_path")
        .and_then(Value::as_str)
        .ok_or("a file tool without file_path")?;
    let path = cwd.join(path);
    let outside = |why: &str| {
        format!(
            "the recording writes outside the working folder{why}: {}",
            path.display()
        )
    };
    if path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
        || !path.starts_with(cwd)
    {
        return Err(outside(""));
    }
    let root = cwd
        .canonicalize()
        .map_err(|e| format!("{}: {e}", cwd.display()))?;
    if !resolve_existing(&path).starts_with(&root) {
        return Err(outside(" through a symbolic link"));
    }
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(outside(" through a symbolic link"));
    }
    Ok(path)
}

/// `path` with its longest existing prefix resolved (links followed), the rest appended.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut head = path;
    loop {
        if let Ok(real) = head.canonicalize() {
            return tail.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                head = parent;
            }
            _ => return path.to_owned(),
        }
    }
}

fn write(input: &Value, cwd: &Path) -> Result<(), String> {
    let path = target(input, cwd)?;
    let content = input
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, content).map_err(|e| format!("{}: {e}", path.display()))
}

fn edit(path: &Path, input: &Value) -> Result<(), String> {
    let old = input
        .get("old_string")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let new = input
        .get("new_string")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let all = input
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !text.contains(old) {
        // The real tool fails the same way; the recording's tool_result says so.
        return Ok(());
    }
    let changed = if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    std::fs::write(path, changed).map_err(|e| format!("{}: {e}", path.display()))
}
