//! The pure note helpers: how a note is written and built from a run, trimming and the cap.

use memory_fs::{
    MAX_NOTE_LINES, PROMPT_CAP_CHARS, format_note, notes_for_prompt, run_note, trim_notes,
    validate_repo_key,
};
use runner_contract::{DiffStat, ErrorKind, FileStat};
use runner_testkit::memory::sample_run;

fn file(path: &str) -> FileStat {
    FileStat {
        path: path.into(),
        old_path: None,
        insertions: 1,
        deletions: 0,
        binary: false,
        too_large: false,
    }
}

/// `count` notes of `body_lines` lines each, formatted as the stores do, joined.
fn notes(count: usize, body_lines: usize) -> String {
    (0..count)
        .map(|i| {
            let body: Vec<String> = (0..body_lines)
                .map(|l| format!("note {i} line {l}"))
                .collect();
            format_note(&format!("t{i}"), &body.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_note_is_a_heading_then_its_lines() {
    let cases = [
        ("when", "one line", "## when\none line\n"),
        ("two\nlines", "x", "## two lines\nx\n"),
        (
            "t",
            "\n\n  first\r\nsecond  \n\n",
            "## t\n  first\nsecond\n",
        ),
        (
            "t",
            "a\n## not a heading\nb",
            "## t\na\n\\## not a heading\nb\n",
        ),
        ("t", "", "## t\n"),
    ];
    for (heading, text, expected) in cases {
        assert_eq!(
            format_note(heading, text),
            expected,
            "format_note({heading:?}, {text:?})"
        );
    }
}

#[test]
fn a_run_note_has_its_summary_on_one_line() {
    let run = sample_run();
    let note = run_note(&run);
    let lines: Vec<&str> = note.lines().collect();
    assert_eq!(lines.len(), 2, "a heading and one summary line: {note:?}");
    assert_eq!(lines[0], format!("## {} {}", run.finished_at, run.branch));
    assert_eq!(
        lines[1],
        "Asked: Fix the failing date test in src/date.ts. Changed 1 file (+3 -1): src/date.ts. \
         Result: Fixed the off-by-one. All tests pass."
    );
}

#[test]
fn a_run_that_changed_nothing_and_said_nothing_says_so() {
    let mut run = sample_run();
    run.diff_stat = DiffStat::default();
    run.result = None;
    let summary = run_note(&run).lines().nth(1).unwrap_or_default().to_owned();
    assert_eq!(
        summary,
        "Asked: Fix the failing date test in src/date.ts. Changed nothing."
    );
}

#[test]
fn a_prompt_that_ends_a_sentence_gets_no_second_full_stop() {
    for (prompt, asked) in [
        (
            "Fix the failing test. Run npm test to check.",
            "Asked: Fix the failing test. Run npm test to check. Changed",
        ),
        ("Why does it fail?", "Asked: Why does it fail? Changed"),
        ("Ship it!", "Asked: Ship it! Changed"),
        ("Fix it", "Asked: Fix it. Changed"),
    ] {
        let mut run = sample_run();
        run.prompt = prompt.to_owned();
        let summary = run_note(&run).lines().nth(1).unwrap_or_default().to_owned();
        assert!(summary.starts_with(asked), "{prompt:?} gave {summary:?}");
    }
}

#[test]
fn a_run_note_stays_short_whatever_the_run() {
    let mut run = sample_run();
    run.prompt = format!("## injected heading\n{}", "word ".repeat(500));
    run.result = Some("done ".repeat(500));
    run.diff_stat = DiffStat::from_files((0..8).map(|i| file(&format!("f{i}.rs"))).collect());
    let note = run_note(&run);
    assert_eq!(note.lines().count(), 2, "still one summary line");
    let summary = note.lines().nth(1).unwrap_or_default();
    assert!(
        summary.chars().count() < 800,
        "shortened: {} chars",
        summary.chars().count()
    );
    assert!(
        summary.contains("Asked: ## injected heading word"),
        "{summary}"
    );
    assert!(
        summary.contains("Changed 8 files (+8 -0): f0.rs, f1.rs, f2.rs, f3.rs, f4.rs and 3 more.")
    );
    assert_eq!(
        summary.matches('…').count(),
        2,
        "prompt and result are cut: {summary}"
    );
    assert_eq!(
        trim_notes(&note, 0),
        note,
        "the prompt cannot split its note in two"
    );
}

#[test]
fn trimming_drops_the_oldest_whole_notes() {
    let all = notes(100, 2); // 100 notes of 4 lines each (heading, 2 lines, blank).
    let trimmed = trim_notes(&all, MAX_NOTE_LINES);
    assert!(all.ends_with(&trimmed), "the newest end is kept");
    assert!(
        trimmed.starts_with("## t"),
        "it starts at a whole note: {:?}",
        &trimmed[..40]
    );
    let lines = trimmed.lines().count();
    assert!(
        lines <= MAX_NOTE_LINES && lines > MAX_NOTE_LINES - 4,
        "{lines} lines"
    );
    assert!(trimmed.contains("note 99 line 1\n"));
    assert!(!trimmed.contains("note 0 line"));
}

#[test]
fn notes_within_the_limit_are_left_alone() {
    for text in ["", "hand-written, no heading\n", &notes(3, 1)] {
        assert_eq!(trim_notes(text, MAX_NOTE_LINES), text);
    }
}

#[test]
fn the_newest_note_is_kept_even_when_it_alone_is_too_long() {
    let all = format!(
        "{}\n{}",
        notes(2, 1),
        format_note("big", &"line\n".repeat(300))
    );
    let trimmed = trim_notes(&all, MAX_NOTE_LINES);
    assert!(trimmed.starts_with("## big\n"), "{:?}", &trimmed[..20]);
    assert_eq!(trimmed.lines().count(), 301);
}

#[test]
fn text_before_the_first_heading_counts_as_the_oldest_note() {
    let all = format!("hand-written\nnotes\n\n{}", notes(60, 2));
    let trimmed = trim_notes(&all, MAX_NOTE_LINES);
    assert!(!trimmed.contains("hand-written"));
    assert!(trimmed.starts_with("## t"));
}

#[test]
fn the_prompt_cap_keeps_the_newest_end_from_a_note_heading() {
    let all = notes(100, 2);
    let prompt = notes_for_prompt(&all, PROMPT_CAP_CHARS);
    assert!(all.ends_with(&prompt));
    assert!(prompt.chars().count() <= PROMPT_CAP_CHARS);
    assert!(
        prompt.starts_with("## t"),
        "no half note at the top: {:?}",
        &prompt[..30]
    );
    assert!(prompt.ends_with("note 99 line 1\n"));
}

#[test]
fn the_prompt_cap_cuts_between_characters() {
    // One long line of two- and three-byte characters, with nowhere better to cut.
    let text = "é日".repeat(4_000);
    let prompt = notes_for_prompt(&text, PROMPT_CAP_CHARS);
    assert_eq!(prompt.chars().count(), PROMPT_CAP_CHARS);
    assert!(text.ends_with(&prompt));
    // A cut inside one long note moves to the next line rather than keep a line in part.
    let lines = format!("{}\nthe last line ü\n", "ü".repeat(7_000));
    assert_eq!(notes_for_prompt(&lines, 100), "the last line ü\n");
}

#[test]
fn notes_within_the_cap_are_given_whole() {
    let exact = "a".repeat(PROMPT_CAP_CHARS);
    for text in ["", "short", exact.as_str(), "preamble\n## t\nbody\n"] {
        assert_eq!(notes_for_prompt(text, PROMPT_CAP_CHARS), text);
    }
    assert_eq!(notes_for_prompt("anything", 0), "");
}

#[test]
fn repo_keys_are_12_lowercase_hex_characters() {
    for good in ["0123456789ab", "ffffffffffff", "3f2a9c1e0b7d"] {
        assert!(validate_repo_key(good).is_ok(), "{good:?} is a key");
    }
    for bad in runner_testkit::memory::BAD_REPO_KEYS {
        let err = validate_repo_key(bad).expect_err(bad);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
    }
}
