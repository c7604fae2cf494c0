//! What callers give: the runner's defaults, a job, a session's options; and what a
//! request resolves to once merged with the defaults and checked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::{self, Mode};
use crate::error::{Error, Result};

/// `cwd`, `args`, `env` and `resume_session_id`, which [`Defaults`], [`Job`] and
/// [`SessionOptions`] share (each has the four fields), written once.
macro_rules! launch_builders {
    () => {
        /// Sets the working folder.
        pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
            self.cwd = Some(cwd.into());
            self
        }

        /// Adds arguments.
        pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
            self.args.extend(args.into_iter().map(Into::into));
            self
        }

        /// Adds a variable to the environment overlay.
        pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.env.push((name.into(), value.into()));
            self
        }

        /// Sets the session to resume.
        pub fn resume_session_id(mut self, id: impl Into<String>) -> Self {
            self.resume_session_id = Some(id.into());
            self
        }
    };
}

/// The grace period of a shutdown when none is given.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// The runner's defaults, applied to every job and session.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defaults {
    /// The program: `claude` on PATH unless set ([`Defaults::program`], or the caller's
    /// `CLAUDE_BIN` through [`Defaults::from_claude_bin`]).
    pub program: PathBuf,
    /// The working folder; `None` is the caller's own.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of the parent environment, in order (a later one wins).
    pub env: EnvOverlay,
    /// Arguments put before each call's own.
    pub args: Vec<String>,
    /// A session (and job) to resume when the call names none: a Claude session id.
    pub resume_session_id: Option<String>,
    /// How long a shutdown waits at each step (stdin closed, SIGTERM) and for output after exit.
    pub shutdown_grace: Duration,
    /// The wall-clock limit of a job that sets none; `None`: no limit.
    pub timeout: Option<Duration>,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            program: PathBuf::from("claude"),
            cwd: None,
            env: EnvOverlay::default(),
            args: Vec::new(),
            resume_session_id: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            timeout: None,
        }
    }
}

impl Defaults {
    launch_builders!();

    /// The defaults with seed 004's program: `claude_bin` (the value of `CLAUDE_BIN`, as the
    /// caller read it: this crate reads no variable) when set and not empty, else `claude`
    /// on PATH. `Defaults::from_claude_bin(std::env::var_os("CLAUDE_BIN"))`.
    pub fn from_claude_bin(claude_bin: Option<std::ffi::OsString>) -> Self {
        match claude_bin.filter(|v| !v.is_empty()) {
            Some(program) => Self::default().program(program),
            None => Self::default(),
        }
    }

    /// Sets the program.
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// Sets the shutdown grace period.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets the jobs' wall-clock limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// A one-shot job: one prompt, one result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Job {
    /// The prompt, sent on stdin as one stream-json user message (never on argv).
    pub prompt: String,
    /// The working folder; `None`: the defaults'.
    pub cwd: Option<PathBuf>,
    /// Arguments after the defaults'.
    pub args: Vec<String>,
    /// Variables set after the defaults' overlay (a later one wins).
    pub env: EnvOverlay,
    /// The wall-clock limit; `None`: the defaults'.
    pub timeout: Option<Duration>,
    /// The Claude session to resume; `None`: the defaults'.
    pub resume_session_id: Option<String>,
}

impl Job {
    launch_builders!();

    /// A job of this prompt, everything else from the defaults.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            cwd: None,
            args: Vec::new(),
            env: EnvOverlay::default(),
            timeout: None,
            resume_session_id: None,
        }
    }

    /// Sets the wall-clock limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// The options of one persistent session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionOptions {
    /// The working folder; `None`: the defaults'.
    pub cwd: Option<PathBuf>,
    /// Arguments after the defaults'.
    pub args: Vec<String>,
    /// Variables set after the defaults' overlay (a later one wins).
    pub env: EnvOverlay,
    /// The Claude session to resume; `None`: the defaults'.
    pub resume_session_id: Option<String>,
    /// The shutdown grace period; `None`: the defaults'.
    pub shutdown_grace: Option<Duration>,
}

impl SessionOptions {
    launch_builders!();

    /// Options that take everything from the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the shutdown grace period.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = Some(grace);
        self
    }
}

/// What a job or session resolved to: the defaults merged with the call, checked. A
/// session keeps a copy ([`crate::Session::config`]); nothing of the caller's is changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedConfig {
    /// The program started.
    pub program: PathBuf,
    /// The working folder, if one was given.
    pub cwd: Option<PathBuf>,
    /// The whole argv after the program: owned flags, then the defaults' and the call's.
    pub argv: Vec<String>,
    /// The merged environment overlay (defaults first, the call's last), on top of the
    /// parent environment.
    pub env: EnvOverlay,
    /// The Claude session resumed, hyphenated.
    pub resume_session_id: Option<String>,
    /// The shutdown grace period.
    pub shutdown_grace: Duration,
    /// A job's wall-clock limit.
    pub timeout: Option<Duration>,
}

/// The call's parts that override or add to the defaults.
pub(crate) struct Call<'a> {
    pub cwd: Option<&'a Path>,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub resume: Option<&'a str>,
    pub grace: Option<Duration>,
    pub timeout: Option<Duration>,
}

impl Defaults {
    /// Merges `call` onto the defaults and checks the result; nothing is spawned on error.
    pub(crate) fn resolve(&self, mode: Mode, call: Call<'_>) -> Result<ResolvedConfig> {
        let cwd = call.cwd.or(self.cwd.as_deref()).map(Path::to_path_buf);
        if let Some(cwd) = &cwd
            && !cwd.is_dir()
        {
            return Err(Error::invalid(format!(
                "the working folder {} is not a directory: create it or give another",
                cwd.display()
            )));
        }
        let mut caller_args = self.args.clone();
        caller_args.extend(call.args.iter().cloned());
        args::check_caller_args(&caller_args)?;
        let env: Vec<(String, String)> = self.env.iter().chain(call.env).cloned().collect();
        for (name, value) in &env {
            if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
                return Err(Error::invalid(format!(
                    "the environment variable {name:?} cannot be set: a name must be \
                     non-empty without '=' or NUL, and a value without NUL"
                )));
            }
        }
        let resume = call
            .resume
            .or(self.resume_session_id.as_deref())
            .map(args::check_resume_id)
            .transpose()?;
        let timeout = call.timeout.or(self.timeout);
        if timeout == Some(Duration::ZERO) {
            return Err(Error::invalid(
                "a timeout of zero would end the job before it starts: give a positive one, or none",
            ));
        }
        Ok(ResolvedConfig {
            program: self.program.clone(),
            cwd,
            argv: args::argv(mode, resume.as_deref(), &caller_args),
            env: EnvOverlay(env),
            resume_session_id: resume,
            shutdown_grace: call.grace.unwrap_or(self.shutdown_grace),
            timeout,
        })
    }
}

/// Refuses a prompt or input with nothing in it: Claude would answer it with an error turn.
pub(crate) fn check_text(text: &str, what: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid(format!(
            "the {what} is empty: give Claude something to read"
        )));
    }
    Ok(())
}

/// An environment overlay: variables set on top of the parent environment, in order (a
/// later one wins). Its debug output names the variables, never their values: they hold
/// API keys.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnvOverlay(pub Vec<(String, String)>);

impl std::ops::Deref for EnvOverlay {
    type Target = Vec<(String, String)>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for EnvOverlay {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl std::fmt::Debug for EnvOverlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}=[redacted]")))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_claude_bin_when_given_else_claude() {
        assert_eq!(Defaults::default().program, PathBuf::from("claude"));
        assert_eq!(
            Defaults::from_claude_bin(Some("/opt/claude".into())).program,
            PathBuf::from("/opt/claude")
        );
        assert_eq!(
            Defaults::from_claude_bin(Some("".into())).program,
            PathBuf::from("claude"),
            "an empty CLAUDE_BIN is unset"
        );
        assert_eq!(
            Defaults::from_claude_bin(None).program,
            PathBuf::from("claude")
        );
    }
}
