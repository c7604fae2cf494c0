//! What every agent's snapshots redact: the parts of a recording that change with every
//! recording (temp folders, the server's port, test runners' durations).

use insta::internals::{Content, ContentPath};

/// Replaces every `<prefix><run of chars allowed by keep>` in `text` with `with`.
pub fn redact_runs(text: &str, prefix: &str, keep: fn(char) -> bool, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        let len: usize = after
            .chars()
            .take_while(|c| keep(*c))
            .map(char::len_utf8)
            .sum();
        out.push_str(with);
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// A dynamic redaction for a command's output: each line naming `duration_ms` (test runners
/// print how long they took, different every run) becomes `[duration line]`. Use it as
/// `"[].payload.output" => insta::dynamic_redaction(without_durations)`.
pub fn without_durations(value: Content, _path: ContentPath<'_>) -> Content {
    Content::from(duration_lines_redacted(value.as_str().unwrap_or_default()))
}

/// `text` with the harness's scratch folder ([`crate::run::scratch_root`]) written `/tmp`, as
/// recordings made in the system's temp folder name theirs: fixtures read the same wherever
/// they were recorded.
pub fn as_tmp(text: &str) -> String {
    match crate::run::scratch_root() {
        Ok(root) => text.replace(&root.display().to_string(), "/tmp"),
        Err(_) => text.to_owned(),
    }
}

/// `text` with each line naming `duration_ms` replaced by `[duration line]`.
pub fn duration_lines_redacted(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.contains("duration_ms") {
                "[duration line]"
            } else {
                l
            }
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_after_the_prefix_are_replaced_and_the_rest_kept() {
        let text = "at /tmp/.tmpAb3x/repo and /tmp/.tmpZZ, port 127.0.0.1:41234/v1";
        let text = redact_runs(text, "/tmp/.tmp", char::is_alphanumeric, "[tmp]");
        let text = redact_runs(
            &text,
            "127.0.0.1:",
            |c| c.is_ascii_digit(),
            "127.0.0.1:[port]",
        );
        assert_eq!(text, "at [tmp]/repo and [tmp], port 127.0.0.1:[port]/v1");
    }

    #[test]
    fn only_the_lines_naming_a_duration_change() {
        assert_eq!(
            duration_lines_redacted("ok 1 - adds\n  duration_ms: 0.51\n# pass 1\n"),
            "ok 1 - adds\n[duration line]\n# pass 1"
        );
    }
}
