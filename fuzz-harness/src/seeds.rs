//! Seed inputs for each target: the agents' recorded output (the fixtures of
//! agent-claude, agent-codex and agent-mini-swe) and well-formed files of each kind read
//! from disk, so the fuzzer starts from real shapes.

use std::path::Path;

use crate::patch::{Kind, MODE_EXEC, MODE_FILE, MODE_LINK, SPLICE, TEXTY, encode};

/// The fixture folders holding agents' recorded output, relative to the repo root.
const FIXTURE_DIRS: &[&str] = &[
    "agent-claude/tests/fixtures",
    "agent-codex/tests/fixtures",
    "third-party/agent-mini-swe/tests/fixtures",
    "agent-vibe/tests/fixtures",
];

/// The seeds of the target `name`, each with a file name, read from the repo at `repo`.
/// Empty for an unknown name.
pub fn seeds(name: &str, repo: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    Ok(match name {
        "agent_output" => agent_output(repo)?,
        "records" => vec![
            ("session-record.json".to_owned(), session_record()),
            ("repo-profile.json".to_owned(), repo_profile()),
            ("notes.md".to_owned(), NOTES.as_bytes().to_vec()),
        ],
        "profiles_and_plugins" => vec![
            ("profile.toml".to_owned(), PROFILE.as_bytes().to_vec()),
            (
                "profile-json-lines.toml".to_owned(),
                PROFILE_JSON_LINES.as_bytes().to_vec(),
            ),
            ("describe.json".to_owned(), DESCRIBE.as_bytes().to_vec()),
            (
                "describe-secrets.json".to_owned(),
                DESCRIBE_SECRETS.as_bytes().to_vec(),
            ),
            ("invocation.json".to_owned(), INVOCATION.as_bytes().to_vec()),
            ("events.json".to_owned(), EVENTS.as_bytes().to_vec()),
            ("error.json".to_owned(), ERROR.as_bytes().to_vec()),
        ],
        "patch" => patch(),
        "acp_server" => acp_server(repo)?,
        _ => Vec::new(),
    })
}

/// Every recorded output, behind a first byte that picks the chunk sizes (see
/// `agent_output`): one seed framed whole, one in small chunks under a small line cap.
fn agent_output(repo: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut seeds = Vec::new();
    for dir in FIXTURE_DIRS {
        let mut files: Vec<_> = std::fs::read_dir(repo.join(dir))?
            .collect::<std::io::Result<Vec<_>>>()?
            .into_iter()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        files.sort();
        let agent = dir.split('/').rev().nth(2).unwrap_or(dir);
        for path in files {
            let output = std::fs::read(&path)?;
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            for knob in [0u8, 0x85] {
                let mut seed = vec![knob];
                seed.extend_from_slice(&output);
                seeds.push((format!("{agent}-{stem}-{knob:02x}"), seed));
            }
        }
    }
    Ok(seeds)
}

/// What an ACP client wrote to `codehands acp` (fuzz-harness/fixtures/acp-client), behind a
/// first byte that picks the read sizes (see `acp_server`): one seed read whole, one in small
/// reads under a small line cap; and one of every session's lines, with a line that is not
/// UTF-8, one with a NUL byte and a last line cut short among them.
fn acp_server(repo: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let dir = repo.join("fuzz-harness/fixtures/acp-client");
    let mut files: Vec<_> = std::fs::read_dir(&dir)?
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    let mut seeds = Vec::new();
    let mut all = vec![0u8];
    for path in files {
        let input = std::fs::read(&path)?;
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        for knob in [0u8, 0x85] {
            let mut seed = vec![knob];
            seed.extend_from_slice(&input);
            seeds.push((format!("{stem}-{knob:02x}"), seed));
        }
        all.extend_from_slice(&input);
        all.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"id\":\xff}\n{\"id\":1,\0\"method\":\"x\"}\n",
        );
    }
    all.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"session/pro");
    seeds.push(("all-with-broken-lines".to_owned(), all));
    Ok(seeds)
}

/// A session record as the store writes it.
pub(crate) fn session_record() -> Vec<u8> {
    br#"{
  "sessionId": "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42",
  "state": "awaiting_approval",
  "agent": "claude-code",
  "repoPath": "/home/someone/project",
  "repoKey": "project-5d41402abc4b2a76",
  "worktreePath": "/home/someone/.codehands/worktrees/project-5d41402abc4b2a76/3f2a9c1e",
  "branch": "codehands/fix-the-tests-3f2a9c1e",
  "baseCommit": "0123456789abcdef0123456789abcdef01234567",
  "prompt": "fix the failing test",
  "model": "sonnet",
  "budgetUsd": 0.5,
  "agentSessionId": "d2b1f0c4-1111-4222-8333-944455556666",
  "lastSeq": 42,
  "failure": null,
  "commit": null,
  "createdAt": "2026-12-03T11:00:00Z",
  "updatedAt": "2026-12-03T11:05:00Z"
}
"#
    .to_vec()
}

/// A repo profile as memory-fs writes it.
fn repo_profile() -> Vec<u8> {
    br#"{
  "language": "node",
  "packageManager": "npm",
  "testCommand": "npm test",
  "nodeVersion": "22",
  "needsInstall": true
}
"#
    .to_vec()
}

/// Repo notes as memory-fs writes them.
const NOTES: &str = "## 2026-12-03T11:00:00Z\n\
The tests need `npm ci` first.\n\
\n\
## 2026-12-03T11:05:00Z run 3f2a9c1e on codehands/fix-the-tests-3f2a9c1e (outcome: pending)\n\
Prompt: fix the failing test\n\
Result: fixed the off-by-one in sum()\n";

/// An agent profile, as in docs/adding-an-agent.md.
const PROFILE: &str = r#"name = "ruff-fix"
description = "Ruff's safe fixes, as an agent"
program = "ruff"
args = ["check", "--fix", "--exit-zero", "--no-cache", "{worktree}"]
parser = "text"
version-args = ["--version"]
"#;

/// A profile whose program prints JSON lines of its own, mapped by field names, with a key
/// variable named without KEY or TOKEN.
const PROFILE_JSON_LINES: &str = r#"name = "patchbot"
description = "Patches, in JSON lines"
program = "/usr/local/bin/patchbot"
parser = "json-lines"
[provider]
api-key-env = "PATCHBOT_AUTH"
model-env = "PATCHBOT_MODEL"
[json-lines]
kind = "event.type"
message = { when = "say", text = "text" }
command-started = { when = "run", command = "cmd", id = "id" }
command = { when = "ran", command = "cmd", exit-code = "code", output = "out", id = "id", test = "is_test" }
result = { when = "done", text = "summary", cost-usd = "usage.usd", input-tokens = "usage.in", output-tokens = "usage.out" }
error = { when = "fail", message = "why" }
"#;

/// A plugin's answer to `describe` for an agent with a key variable and a description.
const DESCRIBE_SECRETS: &str = r#"{"ok":[{"name":"patchbot","capabilities":{"resume":false,"budget":false},"providerEnv":["PATCHBOT_AUTH"],"secretEnvs":["PATCHBOT_AUTH"],"description":"Patches","versionProbe":null}]}"#;

/// A plugin's answer to `describe`.
const DESCRIBE: &str = r#"{"ok":[{"name":"mini-swe-agent","capabilities":{"resume":false,"budget":true},"providerEnv":["OPENAI_API_KEY"],"versionProbe":{"program":"mini","args":["--version"]}}]}"#;

/// A plugin's answer to `invocation`.
const INVOCATION: &str = r#"{"ok":{"program":"mini","args":["-t","fix it","--yolo"],"env":[["MSWEA_CONFIGURED","true"]],"stdin":[],"closeStdin":"after-write"}}"#;

/// A plugin's answer to `parse_line`.
const EVENTS: &str = r#"{"ok":[{"type":"message","payload":{"role":"assistant","text":"done"}},{"type":"task.finished","payload":{"result":"done"}}]}"#;

/// A plugin's error answer.
const ERROR: &str = r#"{"error":{"kind":"panicked","message":"boom"}}"#;

/// File pairs for the `patch` target, one or a few changes each, in its input format.
fn patch() -> Vec<(String, Vec<u8>)> {
    let numbered: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    let edited = numbered.replace("line 12\n", "line twelve\n");
    let f = MODE_FILE;
    let one = |kind, old_mode, new_mode, flags, names, old: &[u8], new: &[u8]| {
        let mut out = Vec::new();
        encode(&mut out, kind, (old_mode, new_mode), flags, names, old, new);
        out
    };
    let mut seeds = vec![
        (
            "text-edit",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"src/lib.rs", b""),
                numbered.as_bytes(),
                edited.as_bytes(),
            ),
        ),
        (
            "no-trailing-newline",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"date.rs", b""),
                b"fn a() {}\n2026\n",
                b"fn a() {}\n2027",
            ),
        ),
        (
            "gains-trailing-newline",
            one(Kind::Modify, f, f, 0, (b"x.txt", b""), b"a\nb", b"a\nb\n"),
        ),
        (
            "binary-edit",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"logo.bin", b""),
                &[0, 1, 2, 255, 254, 0, 7],
                &[0, 1, 3, 255, 0],
            ),
        ),
        (
            "not-utf8-text",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"latin1.txt", b""),
                b"caf\xe9\n",
                b"caf\xe9s\n",
            ),
        ),
        (
            "empty-added",
            one(Kind::Add, f, f, 0, (b"empty.txt", b""), b"", b""),
        ),
        (
            "empty-deleted",
            one(Kind::Delete, f, f, 0, (b"empty.txt", b""), b"", b""),
        ),
        (
            "emptied",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"was-full.txt", b""),
                b"one\ntwo\n",
                b"",
            ),
        ),
        (
            "added",
            one(
                Kind::Add,
                f,
                f,
                0,
                (b"notes/todo.md", b""),
                b"",
                b"- write tests\n- ship\n",
            ),
        ),
        (
            "deleted",
            one(
                Kind::Delete,
                f,
                f,
                0,
                (b"gone.txt", b""),
                numbered.as_bytes(),
                b"",
            ),
        ),
        (
            "mode-change",
            one(
                Kind::Modify,
                f,
                MODE_EXEC,
                0,
                (b"run.sh", b""),
                b"echo hi\n",
                b"echo hi\n",
            ),
        ),
        (
            "mode-and-text",
            one(
                Kind::Modify,
                MODE_EXEC,
                f,
                0,
                (b"run.sh", b""),
                b"echo hi\n",
                b"echo bye\n",
            ),
        ),
        (
            "symlink-added",
            one(
                Kind::Add,
                f,
                MODE_LINK,
                0,
                (b"readme-link", b""),
                b"",
                b"README.md",
            ),
        ),
        (
            "file-to-symlink",
            one(
                Kind::Modify,
                f,
                MODE_LINK,
                0,
                (b"config", b""),
                b"key = 1\n",
                b"config.d/main",
            ),
        ),
        (
            "rename",
            one(
                Kind::Rename,
                f,
                f,
                0,
                (b"old/name.txt", b"new/place.txt"),
                numbered.as_bytes(),
                numbered.as_bytes(),
            ),
        ),
        (
            "rename-and-edit",
            one(
                Kind::Rename,
                f,
                f,
                0,
                (b"guide.md", b"handbook.md"),
                numbered.as_bytes(),
                edited.as_bytes(),
            ),
        ),
        (
            "file-to-folder",
            one(Kind::Rename, f, f, 0, (b"a", b"a/b"), b"x\n", b"x\ny\n"),
        ),
        (
            "spaces-and-unicode",
            one(
                Kind::Modify,
                f,
                f,
                0,
                ("my dir/é ü.txt".as_bytes(), b""),
                b"a\n",
                b"b\n",
            ),
        ),
        (
            "quotes-and-controls",
            one(
                Kind::Add,
                f,
                f,
                0,
                (b"q\"uote\\back\ttab\nnew\x01.txt", b""),
                b"",
                b"x\n",
            ),
        ),
        (
            "rename-odd-names",
            one(
                Kind::Rename,
                f,
                f,
                0,
                (b"trailing space ", b"\"quoted\" \xc3\xa9"),
                b"same\n",
                b"same\n",
            ),
        ),
        (
            "crlf",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"dos.txt", b""),
                b"one\r\ntwo\r\nthree\r\n",
                b"one\r\n2\r\nthree\r\n",
            ),
        ),
        (
            "lone-cr",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"mac.txt", b""),
                b"one\rtwo\n",
                b"one\rtwo\r",
            ),
        ),
        (
            "texty-splice",
            one(
                Kind::Modify,
                f,
                f,
                TEXTY | SPLICE,
                (b"t.txt", b""),
                &(0u8..120).collect::<Vec<_>>(),
                &[60, 90, 1, 2, 3, 13, 14, 15, 16],
            ),
        ),
        (
            "looks-like-diff",
            one(
                Kind::Modify,
                f,
                f,
                0,
                (b"d.patch", b""),
                b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
                b"--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+c\n\\ No newline at end of file\n",
            ),
        ),
    ];
    // Several files in one patch, as a worktree's diff has them.
    let mut many = Vec::new();
    encode(&mut many, Kind::Delete, (f, f), 0, (b"a", b""), b"x\n", b"");
    encode(&mut many, Kind::Add, (f, f), 0, (b"a/b", b""), b"", b"y\n");
    encode(
        &mut many,
        Kind::Modify,
        (f, f),
        SPLICE,
        (b"c.txt", b""),
        numbered.as_bytes(),
        &[100, 120, b'z'],
    );
    encode(
        &mut many,
        Kind::Add,
        (f, f),
        0,
        (b"bin", b""),
        b"",
        &[0xff; 300],
    );
    seeds.push(("many-files", many));
    seeds
        .into_iter()
        .map(|(name, data)| (name.to_owned(), data))
        .collect()
}
