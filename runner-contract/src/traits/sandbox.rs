//! `Sandbox`: runs a repo's tests in a locked box.

use std::path::PathBuf;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;
use crate::traits::memory::RepoProfile;

/// The limits of the test box; the defaults are the locked box ARCHITECTURE.md describes (sandbox-docker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoxLimits {
    /// Memory in bytes, with no swap on top.
    pub memory_bytes: u64,
    /// CPUs (fractional allowed).
    pub cpus: f64,
    /// Processes at most.
    pub pids: u32,
    /// Open files at most.
    pub open_files: u32,
    /// Size of the tmpfs /tmp in bytes.
    pub tmp_bytes: u64,
    /// Wall-clock limit of the test box in seconds.
    pub timeout_secs: u64,
    /// Wall-clock limit of the install box in seconds (installing takes longer than testing).
    pub install_timeout_secs: u64,
    /// Output kept, the last bytes.
    pub output_bytes: usize,
}

impl Default for BoxLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 1 << 30,
            cpus: 1.0,
            pids: 256,
            open_files: 1024,
            tmp_bytes: 64 << 20,
            timeout_secs: 60,
            install_timeout_secs: 300,
            output_bytes: 64 * 1024,
        }
    }
}

/// One sandbox run.
#[derive(Debug, Clone)]
pub struct SandboxRequest {
    /// The session (names the containers and the result file).
    pub session_id: SessionId,
    /// The worktree, bound read-only.
    pub worktree: PathBuf,
    /// What the repo is; picks the image and whether to install.
    pub profile: RepoProfile,
    /// Overrides the profile's test command.
    pub test_command: Option<String>,
    /// Overrides the image the profile would pick.
    pub image: Option<String>,
    /// The IANA timezone for the box; the host's when absent.
    pub timezone: Option<String>,
    /// The box's limits.
    pub limits: BoxLimits,
}

/// Why a box could not run the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SandboxErrorKind {
    /// The engine does not answer.
    #[serde(rename = "sandbox.unavailable")]
    Unavailable,
    /// The repo is of a kind the sandbox cannot test (or is unsafe to, such as node_modules not ignored).
    #[serde(rename = "sandbox.unsupported")]
    Unsupported,
    /// The box broke, not the code (missing image, create failure …).
    #[serde(rename = "sandbox.failed")]
    Failed,
    /// Installing the dependencies failed.
    #[serde(rename = "install.failed")]
    InstallFailed,
}

impl SandboxErrorKind {
    /// The name used in JSON and shown to people (`sandbox.unsupported` …), never the Debug form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "sandbox.unavailable",
            Self::Unsupported => "sandbox.unsupported",
            Self::Failed => "sandbox.failed",
            Self::InstallFailed => "install.failed",
        }
    }
}

/// Why a box could not run the tests, with what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxError {
    /// The kind.
    pub kind: SandboxErrorKind,
    /// What happened and what to do.
    pub message: String,
}

/// The outcome of one sandbox run, also written to `runs/<sessionId>/test-<n>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxResult {
    /// Which run of the session this is (1, 2, … across restarts).
    pub n: u32,
    /// The command that ran.
    pub command: String,
    /// The image used.
    pub image: String,
    /// True only when the tests ran and passed.
    pub passed: bool,
    /// The test command's exit code.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Killed at the time limit.
    pub timed_out: bool,
    /// Killed for memory.
    pub out_of_memory: bool,
    /// The last bytes of output (stdout and stderr together).
    pub output: String,
    /// How long it took.
    pub duration_ms: u64,
    /// Set when the box could not run the tests.
    #[serde(default)]
    pub error: Option<SandboxError>,
}

/// A locked box that runs a repo's tests. It never fails: a box that could not
/// run the tests says so in [`SandboxResult::error`].
#[async_trait]
pub trait Sandbox: Send + Sync {
    /// Whether the engine answers.
    async fn available(&self) -> bool;

    /// Runs the tests once (installing first when the profile needs it).
    async fn run_tests(&self, request: &SandboxRequest) -> SandboxResult;
}
