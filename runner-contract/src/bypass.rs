//! The one list of arguments that turn off an agent program's own permission checks or its
//! sandbox. codehands never passes one (ARCHITECTURE.md, "Security"), and every place that
//! takes arguments from a caller or a profile refuses them through [`find`]: an adapter's
//! extra arguments, seed 004's lifecycle crate, a profile file.

/// The arguments, lower case; [`find`] looks for each anywhere in an argument, without case,
/// so `--flag=value`, a mode given as the value of another flag, and any spelling of case
/// are all caught.
pub const FLAGS: &[&str] = &[
    // Skip every permission check (and the flag that allows doing so later in a session).
    "dangerously-skip-permissions",
    // Approve everything and leave the program's own sandbox.
    "dangerously-bypass-approvals-and-sandbox",
    // The permission mode that approves every tool.
    "bypasspermissions",
    // The sandbox mode that confines nothing.
    "danger-full-access",
    // Approve every tool call.
    "--yolo",
];

/// The entry of [`FLAGS`] that `arg` holds, if any.
pub fn find(arg: &str) -> Option<&'static str> {
    let lower = arg.to_ascii_lowercase();
    FLAGS.iter().copied().find(|flag| lower.contains(flag))
}

#[cfg(test)]
mod tests {
    use super::find;

    #[test]
    fn every_spelling_of_a_bypass_is_found() {
        for arg in [
            "--dangerously-skip-permissions",
            "--allow-dangerously-skip-permissions",
            "--DANGEROUSLY-SKIP-PERMISSIONS",
            "--dangerously-bypass-approvals-and-sandbox",
            "--permission-mode=bypassPermissions",
            "bypassPermissions",
            "--sandbox=danger-full-access",
            "--yolo",
        ] {
            assert!(find(arg).is_some(), "{arg}");
        }
    }

    #[test]
    fn ordinary_arguments_pass() {
        for arg in [
            "--permission-mode",
            "acceptEdits",
            "--sandbox",
            "workspace-write",
            "-p",
        ] {
            assert_eq!(find(arg), None, "{arg}");
        }
    }
}
