//! A command that failed in the box for want of a program the caller's PATH has: said as a
//! `box.hidden` warning, so a run that could not build or test never looks like one whose
//! agent chose not to (README.md, "The agent's box").

use std::path::{Path, PathBuf};

use runner_contract::event::{BoxHidden, CommandFinished};

/// What the shells print for a program they cannot find, around its name.
const NOT_FOUND: &[(&str, &str)] = &[
    // bash: `bash: line 1: cargo: command not found`, `bash: cargo: command not found`
    (": ", ": command not found"),
    // dash: `sh: 1: cargo: not found`, `/bin/sh: cargo: not found`
    (": ", ": not found"),
    // zsh: `zsh: command not found: cargo`
    ("command not found: ", ""),
    // env, exec: `env: 'cargo': No such file or directory`
    (": '", "': No such file or directory"),
];

/// The `box.hidden` warning `finished` calls for: its command could not find a program
/// (exit 127, or a shell's "not found") that `caller_path` has; `home` is the caller's, whose
/// secret places a suggested folder never holds.
pub(super) fn hidden_program(
    finished: &CommandFinished,
    caller_path: Option<&str>,
    home: Option<&Path>,
) -> Option<BoxHidden> {
    let missing = finished.exit_code == Some(127)
        || finished.output.contains("not found")
        || finished.output.contains("No such file or directory");
    if !missing {
        return None;
    }
    let program = missing_name(&finished.output)?;
    let found = find_on(&program, caller_path?)?;
    Some(BoxHidden {
        command: finished.command.clone(),
        program,
        folder: folder_for(&found, home).display().to_string(),
        found: found.display().to_string(),
    })
}

/// The name a shell said it could not find, from its error line.
fn missing_name(output: &str) -> Option<String> {
    output.lines().find_map(|line| {
        NOT_FOUND.iter().find_map(|(before, after)| {
            let rest = if after.is_empty() {
                line.split_once(before)?.1
            } else {
                let head = line.trim_end().strip_suffix(after)?;
                head.rsplit_once(before)?.1
            };
            let name = rest.trim();
            let plain = !name.is_empty()
                && name.len() < 256
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
            plain.then(|| name.to_owned())
        })
    })
}

/// `name` as the caller's PATH finds it.
fn find_on(name: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The folder that brings `program` in: the one above its `bin/` (its install), unless that
/// holds a secret place of `home` (`~/.local` holds the keyrings) or is the home; else its
/// own folder.
fn folder_for(program: &Path, home: Option<&Path>) -> PathBuf {
    let dir = program.parent().unwrap_or(program);
    match (dir.file_name(), dir.parent()) {
        (Some(bin), Some(above))
            if bin == "bin"
                && above != Path::new("/")
                && home.is_none_or(|h| {
                    above != h && runner_contract::secret_places::secret_in(h, above).is_none()
                }) =>
        {
            above.to_owned()
        }
        _ => dir.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shells_words_give_the_name() {
        for (line, name) in [
            ("bash: line 1: cargo: command not found", "cargo"),
            ("bash: cargo: command not found", "cargo"),
            ("sh: 1: cargo: not found", "cargo"),
            ("/bin/sh: 1: pytest: not found", "pytest"),
            ("zsh: command not found: node", "node"),
            ("env: 'uv': No such file or directory", "uv"),
        ] {
            assert_eq!(missing_name(line).as_deref(), Some(name), "{line}");
        }
        assert_eq!(
            missing_name("error: test failed, to rerun pass --lib"),
            None
        );
        assert_eq!(
            missing_name("x: a b: command not found"),
            None,
            "not a name"
        );
    }

    fn finished(output: &str, exit: i32) -> CommandFinished {
        CommandFinished {
            command: "cargo test".into(),
            exit_code: Some(exit),
            is_error: true,
            output: output.into(),
            tool_use_id: None,
        }
    }

    #[test]
    fn a_program_the_callers_path_has_is_named_with_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join(".cargo/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("cargo"), "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = format!("/usr/bin:{}", bin.display());
        let hidden = hidden_program(
            &finished("bash: line 1: cargo: command not found\n", 127),
            Some(&path),
            None,
        )
        .unwrap();
        assert_eq!(hidden.program, "cargo");
        assert_eq!(hidden.found, bin.join("cargo").display().to_string());
        assert_eq!(
            hidden.folder,
            dir.path().join(".cargo").display().to_string()
        );
        assert_eq!(
            hidden_program(
                &finished("sh: 1: nothere: not found", 127),
                Some(&path),
                None
            ),
            None,
            "a program the caller lacks too is no box's doing"
        );
        assert_eq!(
            hidden_program(&finished("2 failed", 1), Some(&path), None),
            None,
            "a failing test is no missing program"
        );
    }

    #[test]
    fn a_folder_holding_a_secret_place_is_never_suggested() {
        let home = Path::new("/home/me");
        assert_eq!(
            folder_for(Path::new("/home/me/.local/bin/tool"), Some(home)),
            Path::new("/home/me/.local/bin"),
            "~/.local holds the keyrings"
        );
        assert_eq!(
            folder_for(Path::new("/home/me/sdk/go/bin/go"), Some(home)),
            Path::new("/home/me/sdk/go")
        );
        assert_eq!(
            folder_for(Path::new("/home/me/bin/tool"), Some(home)),
            Path::new("/home/me/bin"),
            "never the whole home"
        );
    }
}
