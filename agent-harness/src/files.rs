//! The repo every agent's recordings start from: a date formatter whose month is off by
//! one, with or without an npm test suite. One copy for every agent crate's scenarios.

/// `src/date.js` with the month off by one.
pub const DATE_JS: &str = "export function formatDate(date) {\n  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;\n}\n";

/// A `package.json` whose `npm test` runs node's test runner.
pub const PACKAGE_JSON: &str = "{\n  \"name\": \"fixture\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node --test\" }\n}\n";

/// A test file that passes.
pub const PASSING_TEST: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => assert.strictEqual(1 + 1, 2));\n";

/// A test file with one failing test (the month).
pub const FAILING_TEST: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => assert.strictEqual(1 + 1, 2));\ntest('months start at one', () => assert.strictEqual(new Date(2026, 0, 5).getMonth(), 1));\n";

/// The date file and a README: no test suite.
pub const BASE_FILES: &[(&str, &str)] = &[
    ("src/date.js", DATE_JS),
    ("README.md", "# fixture\n\nA small repo for recordings.\n"),
];

/// The date file with an npm suite that passes.
pub const NPM_PASSING: &[(&str, &str)] = &[
    ("src/date.js", DATE_JS),
    ("package.json", PACKAGE_JSON),
    ("test/date.test.js", PASSING_TEST),
];

/// The date file with an npm suite that fails on the month.
pub const NPM_FAILING: &[(&str, &str)] = &[
    ("src/date.js", DATE_JS),
    ("package.json", PACKAGE_JSON),
    ("test/date.test.js", FAILING_TEST),
];
