//! Running an agent's version probe (and every other program codehands asks something of
//! outside a box: `doctor`'s and `agents`' checks): the contract describes the probe
//! ([`VersionProbe`]), the engine spawns it, so no process code lives in runner-contract.
//!
//! A probe runs outside the box, as the caller: so never with the caller's whole environment
//! (an `SSH_AUTH_SOCK`, a `GITHUB_TOKEN` would reach it) and never in the caller's folder or a
//! worktree (files an agent wrote there could steer it). It gets [`probe_env`], the
//! allowlist the agent's own environment is built from, and runs in a [`NeutralDir`].

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use runner_contract::error::{Error, Result};
use runner_contract::home::Home;
use runner_contract::traits::agent::VersionProbe;

/// The environment of a probe: the caller's variables of [`super::env::PASSTHROUGH`] and
/// `extra` (each by exact name: `DOCKER_HOST` for `docker version`), and the hygiene
/// variables, nothing else (no provider key: a version needs none).
pub fn probe_env(
    caller: impl IntoIterator<Item = (String, String)>,
    extra: &[&str],
) -> Vec<(String, String)> {
    let extra: Vec<String> = extra.iter().map(|name| (*name).to_owned()).collect();
    super::env::agent_env(caller, &[], &extra, &[])
}

/// The same with HOME and TMPDIR pointed at `dir`: a probe for a boxed session, whose
/// agent has no caller's home either. Never the box's private home: the agent writes there
/// while the probe runs outside the box (a Python reads `usercustomize` from its home).
pub fn probe_env_in(
    caller: impl IntoIterator<Item = (String, String)>,
    dir: &Path,
) -> Vec<(String, String)> {
    let text = dir.to_string_lossy().into_owned();
    let mut env = probe_env(caller, &[]);
    env.retain(|(k, _)| k != "HOME" && k != "TMPDIR");
    env.push(("HOME".to_owned(), text.clone()));
    env.push(("TMPDIR".to_owned(), text));
    env
}

/// An empty folder of codehands' own (0700, made fresh) that a probe runs in; removed when
/// dropped.
#[derive(Debug)]
pub struct NeutralDir(tempfile::TempDir);

impl NeutralDir {
    /// A fresh folder in `parent` (a run's folder; the system's temp folder outside a
    /// session).
    pub fn make_in(parent: &Path) -> Result<Self> {
        tempfile::Builder::new()
            .prefix(runner_contract::run_folder::PROBE_PREFIX)
            .tempdir_in(parent)
            .map(Self)
            .map_err(|e| {
                Error::io(
                    format!(
                        "cannot make a folder to probe in under {}",
                        parent.display()
                    ),
                    &e,
                )
            })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// `program args` with exactly `env` (nothing of this process's own), in `dir`, with an
/// empty stdin: how every probe is started.
pub fn command<S: AsRef<OsStr>>(
    program: &OsStr,
    args: &[S],
    env: &[(String, String)],
    dir: &Path,
) -> std::process::Command {
    // A bare name is looked up on `env`'s PATH (std does, when the command's PATH is set).
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    command
}

/// Runs `probe` (at most `limit`) with `env` in `dir` and reads the version from what it
/// prints; `None` when it cannot be run or prints none.
pub async fn ask(
    probe: &VersionProbe,
    env: &[(String, String)],
    dir: &Path,
    limit: Duration,
) -> Option<String> {
    let mut command =
        tokio::process::Command::from(command(probe.program.as_os_str(), &probe.args, env, dir));
    command.kill_on_drop(true);
    let out = tokio::time::timeout(limit, command.output())
        .await
        .ok()?
        .ok()?;
    VersionProbe::version_in(&String::from_utf8_lossy(&out.stdout))
}

/// [`ask`], once per program and version: the answer is kept in the home's `versions/`
/// (private, like everything under the home) under the program's path, arguments, size and
/// modification time, so an unchanged program is not run again (a probe of a Python agent
/// costs seconds of CPU). No answer is not kept: the next probe asks again.
pub async fn ask_cached(
    home: &Home,
    probe: &VersionProbe,
    env: &[(String, String)],
    dir: &Path,
    limit: Duration,
) -> Option<String> {
    let cache = home.versions_dir();
    let key = CacheKey::of(probe, env);
    if let Some(version) = key.as_ref().and_then(|key| key.read(&cache)) {
        return Some(version);
    }
    let version = ask(probe, env, dir, limit).await?;
    if let Some(key) = key {
        let program = key.program.clone();
        if let Err(e) = key.write(home, &version) {
            tracing::debug!("cannot keep the version of {program}: {e}");
        }
    }
    Some(version)
}

/// What a kept version answer is kept under.
#[derive(Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CacheKey {
    program: String,
    args: Vec<String>,
    len: u64,
    modified_ns: u128,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
}

impl CacheKey {
    /// The key of `probe`'s program as `env`'s PATH finds it; `None` when it is not found.
    fn of(probe: &VersionProbe, env: &[(String, String)]) -> Option<Self> {
        let program = if probe.program.components().count() > 1 {
            probe.program.clone()
        } else {
            let path = env.iter().find(|(k, _)| k == "PATH")?.1.clone();
            std::env::split_paths(&path)
                .map(|dir| dir.join(&probe.program))
                .find(|p| p.is_file())?
        };
        let meta = std::fs::metadata(&program).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(Self {
            program: program.to_string_lossy().into_owned(),
            args: probe
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            len: meta.len(),
            modified_ns: modified.as_nanos(),
            version: None,
        })
    }

    /// The file of the key in `cache`: named by a hash of it, holding it whole.
    fn file(&self, cache: &Path) -> std::path::PathBuf {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&self.program, &self.args, self.len, self.modified_ns).hash(&mut hasher);
        cache.join(format!("{:016x}.json", hasher.finish()))
    }

    fn read(&self, cache: &Path) -> Option<String> {
        let text = std::fs::read_to_string(self.file(cache)).ok()?;
        let kept: Self = serde_json::from_str(&text).ok()?;
        let same = Self {
            version: None,
            ..kept
        } == *self;
        if same { kept.version } else { None }
    }

    /// Keeps `version` under this key: private (0700 folder, 0600 file, replaced
    /// atomically, never through a link), as everything under the home.
    fn write(self, home: &Home, version: &str) -> Result<()> {
        let (private, cache) = (home.private(), home.versions_dir());
        private.ensure_dir(&cache)?;
        let file = self.file(&cache);
        let kept = Self {
            version: Some(version.to_owned()),
            ..self
        };
        let bytes = serde_json::to_vec(&kept)
            .map_err(|e| Error::internal(format!("cannot write {}: {e}", file.display())))?;
        private.replace_file(&file, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The caller's environment of the tests: secrets beside the allowlist.
    fn caller() -> Vec<(String, String)> {
        [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/me"),
            ("TMPDIR", "/tmp/me"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
            ("GITHUB_TOKEN", "canary-gh"),
            ("AWS_SECRET_ACCESS_KEY", "canary-aws"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[tokio::test]
    async fn a_probe_sees_only_the_allowlist_in_a_folder_of_its_own() {
        let parent = tempfile::tempdir().unwrap();
        let dir = NeutralDir::make_in(parent.path()).unwrap();
        let env = probe_env_in(caller(), dir.path());
        // A "version" that tells what the program saw: its folder and its variables' names.
        let probe = VersionProbe {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "echo \"1.0 $(pwd) $(env | cut -d= -f1 | sort | tr '\\n' ,)\"".into(),
            ],
            tested: None,
        };
        let mut command = tokio::process::Command::from(command(
            probe.program.as_os_str(),
            &probe.args,
            &env,
            dir.path(),
        ));
        let seen = String::from_utf8(command.output().await.unwrap().stdout).unwrap();
        for secret in ["SSH_AUTH_SOCK", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"] {
            assert!(!seen.contains(secret), "{secret} reached the probe: {seen}");
        }
        let real = dir.path().canonicalize().unwrap();
        assert!(seen.contains(&format!(" {} ", real.display())), "{seen}");
        assert!(env.contains(&("HOME".into(), dir.path().display().to_string())));
        assert_eq!(
            ask(&probe, &env, dir.path(), Duration::from_secs(10))
                .await
                .as_deref(),
            Some("1.0")
        );
        let path = dir.path().to_owned();
        drop(dir);
        assert!(!path.exists(), "the folder goes with its probe");
    }

    #[tokio::test]
    async fn a_program_is_asked_its_version_once_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (home, ran) = (Home::new(dir.path().join("home")), dir.path().join("ran"));
        let program = dir.path().join("agent");
        let script = |version: &str| {
            format!(
                "#!/bin/sh\necho x >> '{}'\necho 'agent {version}'\n",
                ran.display()
            )
        };
        std::fs::write(&program, script("1.2.3")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let probe = VersionProbe::dash_dash_version(&program, None);
        let env = probe_env(caller(), &[]);
        let times = || std::fs::read_to_string(&ran).unwrap().lines().count();
        for _ in 0..3 {
            let version = ask_cached(&home, &probe, &env, dir.path(), Duration::from_secs(10));
            assert_eq!(version.await.as_deref(), Some("1.2.3"));
        }
        assert_eq!(times(), 1, "asked once");
        let mode = std::fs::metadata(home.versions_dir())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "the kept versions are private");
        // Another version of the program (its size changed) is asked again.
        std::fs::write(&program, script("1.2.40")).unwrap();
        let version = ask_cached(&home, &probe, &env, dir.path(), Duration::from_secs(10));
        assert_eq!(version.await.as_deref(), Some("1.2.40"));
        assert_eq!(times(), 2);
    }

    #[test]
    fn outside_a_box_the_probe_keeps_the_callers_home() {
        let env = probe_env(caller(), &["SSH_AUTH_SOCK"]);
        assert!(env.contains(&("HOME".into(), "/home/me".into())));
        assert!(!env.iter().any(|(k, _)| k == "GITHUB_TOKEN"));
        assert!(
            env.iter().any(|(k, _)| k == "SSH_AUTH_SOCK"),
            "an extra name passes by its exact name"
        );
    }
}
