//! The demo repo: a small Node project whose test fails because of an
//! off-by-one month. `codehands demo` makes it, and the fake agent's embedded
//! recording (`recordings/date-bug.jsonl`) is the real Claude Code fixing it.

/// `src/date.js` with the bug.
pub const DATE_JS: &str = "\
function formatDate(date) {
  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;
}

module.exports = { formatDate };
";

/// The test that fails until the month is fixed.
pub const DATE_TEST_JS: &str = "\
const test = require('node:test');
const assert = require('node:assert');
const { formatDate } = require('../src/date');

test('months start at one', () => {
  assert.strictEqual(formatDate(new Date(2026, 0, 5)), '2026-1-5');
});
";

/// `package.json`: `npm test` runs node's test runner.
pub const PACKAGE_JSON: &str = "\
{
  \"name\": \"date-bug\",
  \"version\": \"1.0.0\",
  \"private\": true,
  \"scripts\": { \"test\": \"node --test\" }
}
";

/// The prompt of the demo.
pub const PROMPT: &str = "Fix the failing test. Run npm test to check.";

/// The files of the demo repo's first commit, as `(path, content)`.
pub const FILES: &[(&str, &str)] = &[
    ("package.json", PACKAGE_JSON),
    ("src/date.js", DATE_JS),
    ("test/date.test.js", DATE_TEST_JS),
    (".gitignore", "node_modules/\n"),
    (
        "README.md",
        "# date-bug\n\n`formatDate` is off by one month. `npm test` shows it.\n",
    ),
];

/// Writes the demo files into `dir`.
pub fn write(dir: &std::path::Path) -> std::io::Result<()> {
    for (path, content) in FILES {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, content)?;
    }
    Ok(())
}

/// The model's side of the demo, for the scripted model server: read the code,
/// run the tests, fix the month, run the tests again, say what changed.
/// `worktree` is the absolute folder the agent works in (its tools want absolute paths).
#[cfg(feature = "model-server")]
pub fn script(worktree: &std::path::Path) -> model_server::Script {
    use model_server::{Block, Script, Turn};
    use serde_json::json;
    let file = worktree.join("src/date.js").display().to_string();
    let npm_test = || json!({ "command": "npm test", "description": "Run the tests" });
    Script::new([
        Turn::blocks([
            Block::text("I'll look at the date formatter first."),
            Block::tool_use("toolu_demo_01", "Read", json!({ "file_path": file })),
        ]),
        Turn::blocks([Block::tool_use("toolu_demo_02", "Bash", npm_test())]),
        Turn::blocks([
            Block::text("getMonth() counts from 0, so the month is one short. Fixing it."),
            Block::tool_use(
                "toolu_demo_03",
                "Edit",
                json!({ "file_path": file, "old_string": "${date.getMonth()}", "new_string": "${date.getMonth() + 1}" }),
            ),
        ]),
        Turn::blocks([Block::tool_use("toolu_demo_04", "Bash", npm_test())]),
        Turn::text("Fixed: formatDate now adds 1 to getMonth(), so January is 1. npm test passes."),
    ])
}
