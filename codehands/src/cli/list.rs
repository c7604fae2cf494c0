//! `codehands sessions`: the sessions as a table fitted to the terminal, or as JSON.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::Args;
use runner_contract::{Result, Runner, SessionRecord, SessionState};

use super::output;

/// Arguments of `codehands sessions`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only the sessions of this repository.
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,
    /// Only the sessions in this state (awaiting_approval, stopped, failed …); repeatable.
    #[arg(long, value_name = "STATE", value_parser = state)]
    state: Vec<SessionState>,
    /// Print the session records as one JSON array.
    #[arg(long)]
    json: bool,
}

fn state(text: &str) -> std::result::Result<SessionState, String> {
    SessionState::ALL
        .into_iter()
        .find(|s| s.as_str() == text)
        .ok_or_else(|| {
            let names: Vec<&str> = SessionState::ALL.iter().map(|s| s.as_str()).collect();
            format!("{text:?} is not a state: use one of {}", names.join(", "))
        })
}

/// `codehands sessions`.
pub async fn run(args: ListArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    let listing = runner.listing().await?;
    let repo = args
        .repo
        .as_ref()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
    let records: Vec<&SessionRecord> = listing
        .records
        .iter()
        .filter(|r| args.state.is_empty() || args.state.contains(&r.state))
        .filter(|r| {
            repo.as_ref().is_none_or(|want| {
                std::fs::canonicalize(&r.repo_path).unwrap_or_else(|_| r.repo_path.clone()) == *want
            })
        })
        .collect();
    // A workflow whose driver died says so (`workflow/stall.rs`).
    let shown: Vec<String> = records
        .iter()
        .map(|r| runner.workflow_progress(r).state_word(r.state))
        .collect();
    if args.json {
        #[derive(serde::Serialize)]
        struct Listed<'a> {
            #[serde(flatten)]
            record: &'a SessionRecord,
            /// `stalled` for a workflow whose driver died, `running` between two phases of
            /// one that goes on; absent when the state says it.
            #[serde(skip_serializing_if = "Option::is_none")]
            shown: Option<&'a str>,
        }
        let listed: Vec<Listed> = records
            .iter()
            .zip(&shown)
            .map(|(record, shown)| Listed {
                record,
                shown: (shown != record.state.as_str()).then_some(shown.as_str()),
            })
            .collect();
        output::json_line(&listed)?;
        for (path, e) in &listing.unreadable {
            eprintln!("codehands: unreadable {}: {e}", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() && listing.unreadable.is_empty() {
        output::line("no sessions")?;
    }
    let now = SystemTime::now();
    let names = repo_names(&records);
    let rows: Vec<[String; 7]> = records
        .iter()
        .zip(names)
        .zip(&shown)
        .map(|((r, name), shown)| row(r, name, shown, now))
        .collect();
    if !rows.is_empty() {
        for line in table(&rows, output::width()) {
            output::line(&line)?;
        }
        for line in totals(&records) {
            output::line(&cut(&line, output::width()))?;
        }
        // A task whose record cannot be read is said by `codehands task` and `recover`.
        let tasks = runner.tasks().await.unwrap_or_default();
        for line in super::task_view::task_totals(&tasks, &records) {
            output::line(&cut(&line, output::width()))?;
        }
    }
    for (path, e) in &listing.unreadable {
        let name = unreadable_name(path);
        let line = format!(
            "unreadable: {name}: {}",
            runner_contract::present::visible(e.message(), false)
        );
        output::line(&cut(&line, output::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// How an unreadable file is named: a record by its file's name (`<id>.json`), a session's
/// event log as `runs/<id>/events.jsonl`.
fn unreadable_name(path: &std::path::Path) -> String {
    let parts: Vec<_> = path.iter().map(|p| p.to_string_lossy()).collect();
    let start = if path
        .file_name()
        .is_some_and(|n| n == runner_contract::run_folder::EVENTS)
    {
        parts.len().saturating_sub(3)
    } else {
        parts.len().saturating_sub(1)
    };
    parts[start..].join("/")
}

/// One line per repository of the listed sessions that reported a cost: what they cost
/// together, and the tokens they used.
fn totals(records: &[&SessionRecord]) -> Vec<String> {
    let mut repos: std::collections::BTreeMap<String, (usize, f64, runner_contract::TokenCounts)> =
        std::collections::BTreeMap::new();
    for r in records {
        if r.cost_usd.is_none() && r.tokens.is_none() {
            continue;
        }
        let name = r.repo_path.display().to_string();
        let entry = repos.entry(name).or_default();
        entry.0 += 1;
        entry.1 += r.cost_usd.unwrap_or(0.0);
        entry.2 = entry.2 + r.tokens.unwrap_or_default();
    }
    repos
        .into_iter()
        .map(|(repo, (n, cost, tokens))| {
            let sessions = if n == 1 { "session" } else { "sessions" };
            format!(
                "total {repo}: {} over {n} {sessions}, {} tokens in, {} out",
                usd(cost),
                tokens.input,
                tokens.output
            )
        })
        .collect()
}

/// Dollars with cents, and with two significant digits below a cent, so a small run's
/// cost never reads as nothing: `$1.25`, `$0.0012`, `$0.00` only for zero.
fn usd(cost: f64) -> String {
    if cost == 0.0 || cost.abs() >= 0.01 || !cost.is_finite() {
        return format!("${cost:.2}");
    }
    // The digits after the point up to the second significant one.
    let places = (-cost.abs().log10()).floor() as usize + 2;
    format!("${cost:.places$}")
}

/// `line` cut to `width` characters (ending in "…") when it is longer.
fn cut(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) if line.chars().count() > w => {
            let mut cut: String = line.chars().take(w.saturating_sub(1)).collect();
            cut.push('…');
            cut
        }
        _ => line.to_owned(),
    }
}

/// The header of the table.
const HEADER: [&str; 7] = ["ID", "REPO", "AGENT", "STATE", "AGE", "COST", "BRANCH"];

/// How each record's repo is shown: its folder's name, or, when two listed repos share a
/// name, the whole path (with `~` for the home folder) so they do not look the same.
fn repo_names(records: &[&SessionRecord]) -> Vec<String> {
    let name = |r: &SessionRecord| {
        r.repo_path.file_name().map_or_else(
            || r.repo_path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    records
        .iter()
        .map(|r| {
            let shared = records
                .iter()
                .any(|o| o.repo_path != r.repo_path && name(o) == name(r));
            if !shared {
                return name(r);
            }
            match home.as_ref().and_then(|h| r.repo_path.strip_prefix(h).ok()) {
                Some(rest) => format!("~/{}", rest.display()),
                None => r.repo_path.display().to_string(),
            }
        })
        .collect()
}

fn row(r: &SessionRecord, repo: String, state: &str, now: SystemTime) -> [String; 7] {
    let age = humantime::parse_rfc3339(&r.created_at)
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .map_or("?".to_owned(), |d| age(d.as_secs()));
    let cost = r.cost_usd.map_or("–".to_owned(), usd);
    [
        r.session_id.short(),
        runner_contract::present::visible(&repo, false).into_owned(),
        r.agent.to_string(),
        state.to_owned(),
        age,
        cost,
        r.branch.clone(),
    ]
}

/// "45s", "12m", "3h", "5d": how long ago, in its largest unit.
fn age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The rows under a header, in columns two spaces apart; when `width` is known and the table
/// is wider, the repo and branch columns are cut (with "…") so no line is wider.
fn table(rows: &[[String; 7]], width: Option<usize>) -> Vec<String> {
    let chars = |s: &str| s.chars().count();
    let mut widths: [usize; 7] = HEADER.map(chars);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(chars(cell));
        }
    }
    if let Some(width) = width {
        // The columns a person can read cut: the branch (last) first, then the repo.
        let total = |w: &[usize; 7]| w.iter().sum::<usize>() + 2 * (w.len() - 1);
        for column in [6, 1] {
            let over = total(&widths).saturating_sub(width);
            let floor = chars(HEADER[column]).max(6);
            widths[column] = widths[column]
                .saturating_sub(over)
                .max(floor.min(widths[column]));
        }
    }
    let fit = |column: usize, cell: &str, w: usize| {
        if column == 1 && chars(cell) > w {
            // A path's end tells repos apart: the repo column loses its start.
            let keep: String = cell.chars().skip(chars(cell) + 1 - w).collect();
            format!("…{keep}")
        } else {
            cut(cell, Some(w))
        }
    };
    let line = |cells: [&str; 7]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let cell = fit(i, cell, w);
            if i == 6 {
                out.push_str(&cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_owned()
    };
    std::iter::once(line(HEADER))
        .chain(
            rows.iter()
                .map(|r| line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]])),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<[String; 7]> {
        vec![[
            "3f2a9c1e".into(),
            "a-repository-with-a-long-name".into(),
            "claude-code".into(),
            "awaiting_approval".into(),
            "5m".into(),
            "$0.12".into(),
            "codehands/fix-the-failing-test-in-the-date-module-3f2a9c1e".into(),
        ]]
    }

    #[test]
    fn the_table_has_a_header_and_fits_the_width() {
        let wide = table(&rows(), None);
        assert!(wide[0].starts_with("ID        REPO"), "{wide:?}");
        assert!(
            wide[1].ends_with("-3f2a9c1e"),
            "nothing cut without a width"
        );
        let narrow = table(&rows(), Some(80));
        for line in &narrow {
            assert!(line.chars().count() <= 80, "{line:?}");
        }
        assert!(narrow[1].contains('…'), "{narrow:?}");
        let column = |line: &str, word: &str| line[..line.find(word).unwrap()].chars().count();
        assert_eq!(
            column(&narrow[0], "AGENT"),
            column(&narrow[1], "claude-code"),
            "aligned"
        );
    }

    #[test]
    fn totals_sum_cost_and_tokens_per_repo() {
        let record = |repo: &str, cost: Option<f64>, input: u64| {
            let options = runner_contract::StartOptions::new(
                runner_contract::SessionId::new_random(),
                repo,
                "p",
                runner_contract::AgentName::parse("fake").unwrap(),
            );
            let worktree = runner_contract::WorktreeSpec {
                repo: repo.into(),
                base: "0".repeat(40),
                branch: "codehands/x".into(),
                path: "/w".into(),
            };
            let mut record = SessionRecord::queued(&options, "0123456789ab".into(), worktree);
            record.state = SessionState::Approved;
            record.cost_usd = cost;
            record.tokens = cost.map(|_| runner_contract::TokenCounts { input, output: 1 });
            record
        };
        let records = [
            record("/a", Some(0.25), 10),
            record("/b", Some(1.0), 5),
            record("/a", Some(0.5), 20),
            record("/a", None, 0),
        ];
        let refs: Vec<&SessionRecord> = records.iter().collect();
        assert_eq!(
            totals(&refs),
            [
                "total /a: $0.75 over 2 sessions, 30 tokens in, 2 out",
                "total /b: $1.00 over 1 session, 5 tokens in, 1 out",
            ]
        );
    }

    #[test]
    fn small_costs_keep_their_digits() {
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(0.0012), "$0.0012");
        assert_eq!(usd(0.00123), "$0.0012");
        assert_eq!(usd(0.05), "$0.05");
        assert_eq!(usd(0.009), "$0.0090");
        assert_eq!(usd(1.256), "$1.26");
    }

    #[test]
    fn ages_read_in_their_largest_unit() {
        assert_eq!(age(42), "42s");
        assert_eq!(age(600), "10m");
        assert_eq!(age(7200), "2h");
        assert_eq!(age(3 * 86_400), "3d");
    }
}
