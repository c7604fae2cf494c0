//! Reaching the engine `DOCKER_HOST` names, by the Docker CLI's conventions: `unix://` and
//! `tcp://` as bollard reaches them, and `ssh://[user@]host[:port]` the way the Docker CLI
//! does: every connection is `ssh -- host docker system dial-stdio` (the remote user's own
//! `docker` speaks to its engine), here behind a unix socket of our own in a private folder.
//! TLS engines (`DOCKER_TLS_VERIFY`) are refused with what to do instead (README.md, "Where
//! runs run").

use std::path::PathBuf;
use std::time::Duration;

use bollard::Docker;

/// How long the engine may take to answer the first request.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(15);
/// The read and write timeout of a request, in seconds (bollard's default).
const REQUEST_TIMEOUT: u64 = 120;

/// The private folder of an ssh dial's socket, removed when dropped (the `ssh` processes
/// end with their connections).
#[derive(Debug, Default)]
pub(crate) struct Dial(Option<PathBuf>);

impl Drop for Dial {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The engine `docker_host` names (`None`: the local socket), its API version agreed; `ssh_env`
/// is what the `ssh` program is given (the caller's `PATH`, `HOME` and `SSH_AUTH_SOCK`: its
/// `ssh`, keys, agent and known hosts). Keep the [`Dial`] as long as the engine is used.
pub(crate) async fn connect_to(
    docker_host: Option<&str>,
    ssh_env: &[(String, String)],
) -> Result<(Docker, Dial), String> {
    let where_ = docker_host.unwrap_or("the local socket");
    let mut dial = Dial::default();
    let docker = match docker_host {
        Some(host) if host.starts_with("ssh://") => {
            let (dir, socket) = dial_ssh(host, ssh_env)?;
            dial.0 = Some(dir);
            Docker::connect_with_unix(
                &socket.display().to_string(),
                REQUEST_TIMEOUT,
                bollard::API_DEFAULT_VERSION,
            )
        }
        Some(host) => Docker::connect_with_host(host),
        None => Docker::connect_with_local_defaults(),
    }
    .map_err(|e| format!("cannot reach the Docker engine at {where_}: {e}; check DOCKER_HOST"))?;
    match tokio::time::timeout(ENGINE_TIMEOUT, docker.negotiate_version()).await {
        Ok(Ok(docker)) => Ok((docker, dial)),
        Ok(Err(e)) => Err(format!(
            "the Docker engine at {where_} does not answer: {e}; start it or check DOCKER_HOST{}",
            if where_.starts_with("ssh://") {
                " (`ssh HOST docker version` must work without a question: a key or agent, \
                 the host in known_hosts)"
            } else {
                ""
            }
        )),
        Err(_) => Err(format!(
            "the Docker engine at {where_} did not answer within {ENGINE_TIMEOUT:?}"
        )),
    }
}

/// Refuses what this build cannot reach: a TLS engine (`DOCKER_TLS_VERIFY` set), whose
/// certificates bollard reads only with a TLS library this build leaves out.
pub fn check_host(docker_host: Option<&str>, tls_verify: bool) -> Result<(), String> {
    match docker_host {
        Some(host) if tls_verify && !host.starts_with("ssh://") && !host.starts_with("unix://") => {
            Err(format!(
                "DOCKER_TLS_VERIFY is set for {host}: TLS engines are not supported by this build \
                 of codehands; reach the engine as DOCKER_HOST=ssh://USER@HOST (the engine's \
                 machine runs sshd and docker), or through an ssh tunnel to its socket"
            ))
        }
        Some(host) if host.starts_with("ssh://") => parse_ssh(host).map(drop),
        _ => Ok(()),
    }
}

/// `ssh://[user@]host[:port]`: the user, the host, the port.
fn parse_ssh(url: &str) -> Result<(Option<String>, String, Option<u16>), String> {
    let bad = || {
        format!(
            "DOCKER_HOST={url:?} is not ssh://[USER@]HOST[:PORT] (no path, no password): \
             write it like ssh://me@build.example.com"
        )
    };
    let rest = url.strip_prefix("ssh://").ok_or_else(bad)?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains('/') || rest.is_empty() {
        return Err(bad());
    }
    let (user, host_port) = match rest.rsplit_once('@') {
        Some((user, host)) if !user.is_empty() && !user.contains(':') => {
            (Some(user.to_owned()), host)
        }
        Some(_) => return Err(bad()),
        None => (None, rest),
    };
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.starts_with('[') => {
            (host, Some(port.parse::<u16>().map_err(|_| bad())?))
        }
        _ => (host_port, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // Neither may read as an option of ssh's.
    if host.is_empty()
        || host.starts_with('-')
        || user.as_deref().is_some_and(|u| u.starts_with('-'))
    {
        return Err(bad());
    }
    Ok((user, host.to_owned(), port))
}

/// Listens on a socket in a private folder of our own; each connection to it is carried by
/// `ssh … docker system dial-stdio`. Returns the folder and the socket's path.
fn dial_ssh(url: &str, ssh_env: &[(String, String)]) -> Result<(PathBuf, PathBuf), String> {
    use std::os::unix::fs::DirBuilderExt;
    let (user, host, port) = parse_ssh(url)?;
    let dir = std::env::temp_dir().join(format!("codehands-ssh-{}", uuid::Uuid::new_v4().simple()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let socket = dir.join("docker.sock");
    let listener = tokio::net::UnixListener::bind(&socket).map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        format!("cannot listen on {}: {e}", socket.display())
    })?;
    let mut args: Vec<String> = vec!["-o".into(), "BatchMode=yes".into()];
    if let Some(user) = user {
        args.extend(["-l".into(), user]);
    }
    if let Some(port) = port {
        args.extend(["-p".into(), port.to_string()]);
    }
    args.extend(["--".into(), host]);
    args.extend(["docker", "system", "dial-stdio"].map(String::from));
    let ssh_env = ssh_env.to_vec();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (args, ssh_env) = (args.clone(), ssh_env.clone());
            tokio::spawn(async move { carry(stream, &args, &ssh_env).await });
        }
    });
    Ok((dir, socket))
}

/// Carries one connection through a new `ssh` process.
async fn carry(mut stream: tokio::net::UnixStream, args: &[String], ssh_env: &[(String, String)]) {
    let mut command = runner_process::foreground::Foreground::new("ssh");
    // The caller's PATH (its `ssh`) comes with `ssh_env`; without it, the usual places.
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(ssh_env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let Ok(mut child) = command.spawn_async() else {
        eprintln!("codehands: cannot run ssh to reach the Docker engine: is it installed?");
        return;
    };
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return;
    };
    let mut remote = tokio::io::join(stdout, stdin);
    let _ = tokio::io::copy_bidirectional(&mut stream, &mut remote).await;
    let _ = child.kill().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ssh_host_is_read_like_the_docker_cli_reads_it() {
        assert_eq!(
            parse_ssh("ssh://me@build.example.com").unwrap(),
            (Some("me".into()), "build.example.com".into(), None)
        );
        assert_eq!(
            parse_ssh("ssh://127.0.0.1:2222").unwrap(),
            (None, "127.0.0.1".into(), Some(2222))
        );
        assert_eq!(
            parse_ssh("ssh://u@[::1]:22/").unwrap(),
            (Some("u".into()), "::1".into(), Some(22))
        );
        for bad in [
            "ssh://",
            "ssh://u:pw@host",
            "ssh://host/path",
            "ssh://-oProxyCommand=x",
            "ssh://-u@host",
            "ssh://host:port",
        ] {
            assert!(parse_ssh(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tls_engine_is_refused_with_what_to_do() {
        let err = check_host(Some("tcp://engine:2376"), true).unwrap_err();
        assert!(err.contains("ssh://"), "{err}");
        assert!(check_host(Some("tcp://engine:2375"), false).is_ok());
        assert!(check_host(Some("ssh://me@engine"), true).is_ok());
        assert!(check_host(Some("ssh://me@engine/x"), false).is_err());
    }
}
