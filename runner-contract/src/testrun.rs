//! Recognising test runs in commands, and failures in their output, even when
//! the exit code says 0 (`npm test | tail` hides it). Shared by every agent adapter:
//! [`finished`] builds the events of a finished command, the one place that says what
//! `command.finished` and `test.result` hold.

use crate::event::{CommandFinished, EventBody, TestResult};

/// Commands (or their starts) that run a test suite.
const TEST_COMMANDS: &[&[&str]] = &[
    &["npm", "test"],
    &["npm", "t"],
    &["npm", "run", "test"],
    &["pnpm", "test"],
    &["pnpm", "run", "test"],
    &["yarn", "test"],
    &["yarn", "run", "test"],
    &["bun", "test"],
    &["bun", "run", "test"],
    &["deno", "test"],
    &["node", "--test"],
    &["npx", "jest"],
    &["npx", "vitest"],
    &["npx", "mocha"],
    &["jest"],
    &["vitest"],
    &["mocha"],
    &["pytest"],
    &["py.test"],
    &["python", "-m", "pytest"],
    &["python3", "-m", "pytest"],
    &["uv", "run", "pytest"],
    &["tox"],
    &["cargo", "test"],
    &["cargo", "nextest"],
    &["go", "test"],
    &["make", "test"],
    &["make", "check"],
    &["mvn", "test"],
    &["gradle", "test"],
    &["./gradlew", "test"],
    &["dotnet", "test"],
    &["rspec"],
    &["bundle", "exec", "rspec"],
    &["phpunit"],
    &["mix", "test"],
    &["swift", "test"],
    &["ctest"],
];

/// Whether a command line runs tests: any of its pipeline or `&&` parts starts
/// like a known test command (after `cd …` and variable assignments).
pub fn is_test_command(command: &str) -> bool {
    command.split(['|', ';', '&', '\n']).any(|part| {
        let words: Vec<&str> = part
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        TEST_COMMANDS
            .iter()
            .any(|known| words.len() >= known.len() && words[..known.len()] == **known)
            || runs_a_test_file(&words)
    })
}

/// `node test.js`, `node tests/date.test.mjs`, `python test_date.py`, `bun spec/x.ts`: a
/// script runner given a file whose name says test or spec.
fn runs_a_test_file(words: &[&str]) -> bool {
    const RUNNERS: &[&str] = &[
        "node", "nodejs", "bun", "deno", "tsx", "ts-node", "python", "python3",
    ];
    const SCRIPTS: &[&str] = &[".js", ".mjs", ".cjs", ".ts", ".mts", ".py"];
    let Some((runner, rest)) = words.split_first() else {
        return false;
    };
    if !RUNNERS.contains(runner) {
        return false;
    }
    rest.iter()
        .find(|w| !w.starts_with('-'))
        .is_some_and(|file| {
            let name = file.rsplit('/').next().unwrap_or(file).to_ascii_lowercase();
            let dir_says = file.starts_with("test/") || file.starts_with("tests/");
            SCRIPTS.iter().any(|ext| name.ends_with(ext))
                && (dir_says || name.contains("test") || name.contains("spec"))
        })
}

/// Whether `command` runs the repo's own test command `repo_command` (its profile's, as
/// `--verify` runs it): one of its pipeline or `&&` parts is that command, whatever the
/// spaces, or starts with it.
pub fn runs_repo_tests(command: &str, repo_command: &str) -> bool {
    let want: Vec<&str> = repo_command.split_whitespace().collect();
    !want.is_empty()
        && command.split(['|', ';', '&', '\n']).any(|part| {
            let words: Vec<&str> = part
                .split_whitespace()
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .collect();
            words.len() >= want.len() && words[..want.len()] == want[..]
        })
}

/// The `test.result` of a finished command a parser did not know ran tests (the repo's
/// own test command, [`runs_repo_tests`]), read from its output as [`finished`] reads it.
pub fn result_of(finished: &CommandFinished) -> EventBody {
    let verdict = read_output(&finished.output);
    EventBody::TestResult(TestResult {
        command: finished.command.clone(),
        passed: finished.exit_code == Some(0) && !finished.is_error && !verdict.failed,
        exit_code: finished.exit_code,
        sandboxed: false,
        summary: verdict.summary,
        tool_use_id: finished.tool_use_id.clone(),
        could_not_run: None,
    })
}

/// The most of a command's output an event keeps: its end, where test summaries are.
pub const OUTPUT_KEEP: usize = 64 * 1024;

/// A command an agent ran, as its parser read it.
#[derive(Debug, Clone, Default)]
pub struct RanCommand {
    /// The command line.
    pub command: String,
    /// The exit code, when the agent reports one.
    pub exit_code: Option<i32>,
    /// Whether the agent marked the result as an error.
    pub is_error: bool,
    /// The whole output as the agent saw it.
    pub output: String,
    /// The agent's id for the tool call.
    pub tool_use_id: Option<String>,
}

/// The events of a finished command, for every agent's parser: `command.finished` with
/// the end of the output ([`OUTPUT_KEEP`]), then, when the command runs tests,
/// `test.result`. The tests passed only when the exit code is 0, the agent did not mark
/// an error, and the output shows no failure (`npm test | tail` exits 0 on a failure).
pub fn finished(ran: RanCommand) -> Vec<EventBody> {
    let is_test = is_test_command(&ran.command);
    finished_marked(ran, is_test)
}

/// [`finished`] for a parser that knows whether the command ran tests (its agent said so,
/// or its command is one the fixed list of [`is_test_command`] does not know): `test.result`
/// follows exactly when `is_test`, read from the output the same way.
pub fn finished_marked(ran: RanCommand, is_test: bool) -> Vec<EventBody> {
    let test = is_test.then(|| {
        let verdict = read_output(&ran.output);
        EventBody::TestResult(TestResult {
            command: ran.command.clone(),
            passed: ran.exit_code == Some(0) && !ran.is_error && !verdict.failed,
            exit_code: ran.exit_code,
            sandboxed: false,
            summary: verdict.summary,
            tool_use_id: ran.tool_use_id.clone(),
            could_not_run: None,
        })
    });
    std::iter::once(command_finished(ran)).chain(test).collect()
}

/// `command.finished` alone, with the end of the output: for a command that ran nothing
/// a test result could speak of (refused by the agent's permissions).
pub fn command_finished(ran: RanCommand) -> EventBody {
    EventBody::CommandFinished(CommandFinished {
        command: ran.command,
        exit_code: ran.exit_code,
        is_error: ran.is_error,
        output: keep_end(ran.output),
        tool_use_id: ran.tool_use_id,
    })
}

/// The end of a long output, on a character boundary, marked with `…`.
pub fn keep_end(mut output: String) -> String {
    if output.len() <= OUTPUT_KEEP {
        return output;
    }
    let mut start = output.len() - OUTPUT_KEEP;
    while !output.is_char_boundary(start) {
        start += 1;
    }
    output.replace_range(..start, "…");
    output
}

/// What a test run's output says.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the output shows a failure.
    pub failed: bool,
    /// The line that says so, or the line that reports a pass.
    pub summary: Option<String>,
}

/// Reads a test run's output for failures and a summary line.
pub fn read_output(output: &str) -> Verdict {
    let mut pass_line = None;
    for line in output.lines() {
        let trimmed = line.trim();
        if shows_failure(trimmed) {
            return Verdict {
                failed: true,
                summary: Some(short(trimmed)),
            };
        }
        if pass_line.is_none() && shows_pass(trimmed) {
            pass_line = Some(short(trimmed));
        }
    }
    Verdict {
        failed: false,
        summary: pass_line,
    }
}

fn short(line: &str) -> String {
    let line = line.trim_start_matches(['#', ' ', 'ℹ', '✖', '✔']);
    line.chars().take(200).collect()
}

fn shows_failure(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    // TAP and node's runner ("not ok 2 - …", "# fail 1"), cargo, go, npm.
    (line.starts_with("not ok ") && !lower.contains("# skip") && !lower.contains("# todo"))
        || count_after(&lower, "# fail ").is_some_and(|n| n > 0)
        || count_after(&lower, "ℹ fail ").is_some_and(|n| n > 0)
        || lower.starts_with("test result: failed")
        || line.starts_with("--- FAIL")
        || line == "FAIL"
        || line.starts_with("FAIL\t")
        || line.starts_with("FAIL ")
        || lower.contains("npm err! test failed")
        || failed_count(&lower) > 0
}

fn shows_pass(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.starts_with("# pass ")
        || lower.starts_with("ℹ pass ")
        || lower.starts_with("test result: ok")
        || lower.starts_with("tests:")
        || (lower.contains(" passed") && lower.chars().any(|c| c.is_ascii_digit()))
        || lower.contains(" passing")
        || line == "PASS"
        || line.starts_with("ok \t")
        || line.starts_with("ok  ")
}

/// The number right after `prefix` at the start of `line`.
fn count_after(line: &str, prefix: &str) -> Option<u64> {
    let rest = line.strip_prefix(prefix)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The largest N in "N failed", "N failing", "N failure(s)", "N error(s)" summaries.
fn failed_count(line: &str) -> u64 {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')' | ';' | '='))
        .filter(|w| !w.is_empty())
        .collect();
    let mut worst = 0;
    for pair in words.windows(2) {
        let word = pair[1].trim_end_matches(['.', ':']);
        if matches!(
            word,
            "failed" | "failing" | "failure" | "failures" | "errors" | "error"
        ) && let Ok(n) = pair[0].parse::<u64>()
        {
            worst = worst.max(n);
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parser_marks_a_command_as_a_test_or_not() {
        let ran = |command: &str| RanCommand {
            command: command.into(),
            exit_code: Some(0),
            output: "Ran 3 checks\n1 failed\n".into(),
            ..RanCommand::default()
        };
        match &finished_marked(ran("./check-all"), true)[..] {
            [EventBody::CommandFinished(_), EventBody::TestResult(t)] => {
                assert!(!t.passed, "the output's failure counts: {t:?}");
                assert_eq!(t.command, "./check-all");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(finished_marked(ran("npm test"), false).len(), 1);
        assert_eq!(finished(ran("npm test")).len(), 2);
    }

    #[test]
    fn knows_test_commands() {
        for yes in [
            "npm test",
            "npm test | tail -n 20",
            "cd app && npm run test -- --watch=false",
            "CI=1 pnpm test",
            "yarn test",
            "python -m pytest -q",
            "pytest tests/",
            "node test.js",
            "node --experimental-vm-modules tests/date.test.mjs",
            "python3 test_date.py",
            "cargo test -p x",
            "go test ./...",
            "node --test",
        ] {
            assert!(is_test_command(yes), "{yes}");
        }
        for no in [
            "npm install",
            "ls test",
            "cat pytest.ini",
            "node build.js",
            "node",
            "python manage.py runserver",
            "echo npm test-x",
            "git status",
        ] {
            assert!(!is_test_command(no), "{no}");
        }
    }

    #[test]
    fn the_repos_own_test_command_is_known_however_it_is_spelt() {
        assert!(runs_repo_tests(
            "./scripts/check.sh --all | tail",
            "./scripts/check.sh"
        ));
        assert!(runs_repo_tests("cd app &&  make   verify", "make verify"));
        assert!(!runs_repo_tests("make verify-docs", "make verify"));
        assert!(!runs_repo_tests("echo make verify", "make verify"));
        assert!(!runs_repo_tests("anything", "  "));
        let EventBody::TestResult(t) = result_of(&CommandFinished {
            command: "make verify".into(),
            exit_code: Some(0),
            is_error: false,
            output: "# fail 1".into(),
            tool_use_id: Some("t1".into()),
        }) else {
            panic!("a test.result")
        };
        assert!(!t.passed, "the output's failure counts");
        assert_eq!(t.tool_use_id.as_deref(), Some("t1"));
    }

    #[test]
    fn sees_failures_in_every_runner_style() {
        for (output, summary) in [
            ("# tests 2\n# pass 1\n# fail 1\n", "fail 1"),
            (
                "not ok 2 - months start at one\n",
                "not ok 2 - months start at one",
            ),
            ("  2 passing\n  1 failing\n", "1 failing"),
            (
                "Tests:       1 failed, 3 passed, 4 total\n",
                "Tests:       1 failed, 3 passed, 4 total",
            ),
            (
                "===== 1 failed, 2 passed in 0.1s =====",
                "===== 1 failed, 2 passed in 0.1s =====",
            ),
            (
                "test result: FAILED. 1 passed; 1 failed; 0 ignored",
                "test result: FAILED. 1 passed; 1 failed; 0 ignored",
            ),
            ("--- FAIL: TestX (0.00s)\nFAIL\n", "--- FAIL: TestX (0.00s)"),
            ("3 examples, 1 failure\n", "3 examples, 1 failure"),
        ] {
            assert_eq!(
                read_output(output),
                Verdict {
                    failed: true,
                    summary: Some(summary.into())
                },
                "{output}"
            );
        }
    }

    #[test]
    fn passes_clean_output_with_its_summary() {
        for (output, summary) in [
            ("# tests 1\n# pass 1\n# fail 0\n", Some("pass 1")),
            (
                "test result: ok. 3 passed; 0 failed; 0 ignored",
                Some("test result: ok. 3 passed; 0 failed; 0 ignored"),
            ),
            (
                "===== 2 passed in 0.01s =====",
                Some("===== 2 passed in 0.01s ====="),
            ),
            (
                "ok  \texample.com/x\t0.01s\n",
                Some("ok  \texample.com/x\t0.01s"),
            ),
            ("nothing to report", None),
        ] {
            assert_eq!(
                read_output(output),
                Verdict {
                    failed: false,
                    summary: summary.map(String::from)
                },
                "{output}"
            );
        }
    }
}

#[cfg(test)]
mod finished_tests {
    use super::*;

    fn ran(command: &str, exit_code: Option<i32>, output: &str) -> RanCommand {
        RanCommand {
            command: command.into(),
            exit_code,
            is_error: false,
            output: output.into(),
            tool_use_id: Some("t1".into()),
        }
    }

    fn passed(events: &[EventBody]) -> Option<bool> {
        events.iter().find_map(|e| match e {
            EventBody::TestResult(t) => Some(t.passed),
            _ => None,
        })
    }

    #[test]
    fn a_test_run_passes_only_with_exit_zero_and_no_failure_in_its_output() {
        assert_eq!(
            passed(&finished(ran("npm test", Some(0), "# pass 2"))),
            Some(true)
        );
        assert_eq!(
            passed(&finished(ran("npm test", Some(0), "# fail 1"))),
            Some(false)
        );
        assert_eq!(
            passed(&finished(ran("npm test", Some(1), "# pass 2"))),
            Some(false)
        );
        assert_eq!(
            passed(&finished(ran("npm test", None, "# pass 2"))),
            Some(false)
        );
        let mut marked = ran("npm test", Some(0), "# pass 2");
        marked.is_error = true;
        assert_eq!(passed(&finished(marked)), Some(false));
    }

    #[test]
    fn other_commands_have_no_test_result_and_long_output_keeps_its_end() {
        let long = format!("{}END", "x".repeat(OUTPUT_KEEP * 2));
        let events = finished(ran("ls", Some(0), &long));
        assert_eq!(events.len(), 1);
        match &events[0] {
            EventBody::CommandFinished(done) => {
                assert!(done.output.ends_with("END") && done.output.starts_with('…'));
                assert!(done.output.len() <= OUTPUT_KEEP + '…'.len_utf8());
            }
            other => panic!("{other:?}"),
        }
    }
}
