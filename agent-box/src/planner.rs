//! Making a box plan from what the runner knows: the worktree, the run's folder, the agent's
//! invocation and environment, what the agent says it needs, the repository's git folders.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use runner_contract::{BoxNeeds, Error, Result};

use crate::plan::{
    BoxCommand, BoxPlan, Destination, Endpoint, HostEntry, HostPort, Limits, LoginFile, LoginHow,
    Network, PLAN_VERSION, SymLink, SystemPath,
};

/// The port of the allow-list proxy inside the box.
pub const PROXY_PORT: u16 = 3128;

/// The uid and gid the agent has inside when the caller is root.
pub const UID_FOR_ROOT: u32 = 1000;

/// The system folders, bound read-only (or made the same link) when the host has them.
pub const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// The files and folders of `/etc` a box gets (when the host has them): the dynamic
/// linker's, name service switch, certificates, time zone, alternatives and a few tables.
/// Never `/etc` whole (`shadow`, `sudoers`, the host's `resolv.conf`).
pub const ETC: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/alternatives",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
];

/// Everything a plan is made from.
#[derive(Debug, Clone)]
pub struct BoxInputs<'a> {
    /// The session id.
    pub session: &'a str,
    /// `runs/<id>/`.
    pub run_dir: &'a Path,
    /// The worktree.
    pub worktree: &'a Path,
    /// Bind the worktree read-only (a workflow's read-only phase).
    pub worktree_read_only: bool,
    /// The program answering `__box` and `__box-init`.
    pub helper: &'a Path,
    /// bubblewrap.
    pub bwrap: &'a Path,
    /// The agent's program, as its invocation names it.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [OsString],
    /// The agent's environment, as built for it (PATH, the caller's HOME, the base URL).
    pub env: &'a [(String, String)],
    /// What the agent needs.
    pub needs: &'a BoxNeeds,
    /// The repository's git folders for this worktree.
    pub git: Option<runner_contract::GitDirs>,
    /// The limits.
    pub limits: Limits,
    /// The cgroup, when the machine gives one ([`crate::cgroup::find`]).
    pub cgroup: Option<crate::plan::Cgroup>,
}

/// The plan of one box.
pub fn plan(inputs: &BoxInputs<'_>) -> Result<BoxPlan> {
    let var = |name: &str| {
        inputs
            .env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let caller_home = var("HOME").map(PathBuf::from);
    // The home the system gives this user, when HOME says another: neither is the box's.
    let own_home = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|user| user.dir)
        .filter(|dir| dir.is_absolute() && dir != Path::new("/"));
    let homes: Vec<&Path> = caller_home
        .iter()
        .chain(&own_home)
        .map(PathBuf::as_path)
        .collect();
    let home = inputs.run_dir.join("home");
    let tmp = inputs.run_dir.join("tmp");
    let system = system_paths();
    let mut tools: Vec<PathBuf> = Vec::new();
    for dir in std::env::split_paths(var("PATH").unwrap_or_default()) {
        let outside = homes.iter().all(|h| is_tool_dir(&dir, Some(h)));
        if outside && is_tool_dir(&dir, None) && !covered(&dir, &system, &tools) {
            tools.push(dir);
        }
    }
    // The caller's toolchains under their home, read-only, with their variables
    // (`toolchains.rs`); the rest of the home stays out.
    let mut toolchain_env: Vec<(String, String)> = Vec::new();
    for caller in &homes {
        let found = crate::toolchains::find(var("PATH").unwrap_or_default(), caller, inputs.env);
        for path in found.read_only {
            if !covered(&path, &system, &tools) {
                tools.push(path);
            }
        }
        for (name, value) in found.env {
            if !toolchain_env.iter().any(|(k, _)| *k == name) {
                toolchain_env.push((name, value));
            }
        }
    }
    let mut links = Vec::new();
    for path in &inputs.needs.read_only {
        host_links(path, &system, &mut links);
    }
    for path in &inputs.needs.read_only {
        // Its real path (a `..` in it is resolved here). An install folder may be in the
        // caller's home, but never be the home, hold it, or be the root.
        let Ok(path) = path.canonicalize() else {
            continue;
        };
        let above_home = homes.iter().any(|h| h.starts_with(&path));
        if path.parent().is_some() && !above_home && !covered(&path, &system, &tools) {
            tools.push(path);
        }
    }
    // The program's file, its interpreters' and each one's own package folder, never a
    // folder many installs share (`program.rs`).
    let program = crate::program::resolve(inputs.program, var("PATH"), &homes)?;
    for path in &program.named {
        host_links(path, &system, &mut links);
    }
    for path in program.binds {
        let above_home = homes.iter().any(|h| h.starts_with(&path));
        if !above_home && !covered(&path, &system, &tools) {
            tools.push(path);
        }
    }
    // A link inside a bound folder is there already (a venv's `bin/python`): made again
    // over it, bubblewrap would refuse the box.
    links.retain(|link| !tools.iter().any(|tool| link.path.starts_with(tool)));
    let helper = inputs.helper.canonicalize().map_err(|e| {
        Error::io(
            format!("cannot find the box helper {}", inputs.helper.display()),
            &e,
        )
    })?;
    let args = inputs
        .args
        .iter()
        .map(|a| {
            a.to_str().map(str::to_owned).ok_or_else(|| {
                Error::invalid_input(format!(
                    "the agent's argument {a:?} is not UTF-8: the box cannot carry it"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let login = caller_home
        .as_deref()
        .map(|caller| {
            inputs
                .needs
                .login
                .iter()
                .filter(|l| is_below(&l.path) && caller.join(&l.path).is_file())
                .map(|l| LoginFile {
                    source: caller.join(&l.path),
                    dest: home.join(&l.path),
                    how: if l.copy {
                        LoginHow::Copy
                    } else {
                        LoginHow::ReadOnly
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    let base_urls: Vec<(&str, &str)> = inputs
        .needs
        .base_url_envs
        .iter()
        .filter_map(|name| var(name).map(|v| (name.as_str(), v)))
        .collect();
    let network = if base_urls.is_empty() {
        network_for_hosts(&inputs.needs.hosts)?
    } else {
        network_for_base_urls(&base_urls)?
    };
    let mut env = vec![
        ("HOME".to_owned(), path_text(&home)),
        ("TMPDIR".to_owned(), path_text(&tmp)),
    ];
    for name in &inputs.needs.state_envs {
        env.push((name.clone(), path_text(&state_dir(&home, name)?)));
    }
    env.extend(toolchain_env);
    if network
        .endpoints
        .iter()
        .any(|e| matches!(e.to, Destination::Proxy(_)))
    {
        let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            env.push((name.to_owned(), proxy.clone()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            env.push((name.to_owned(), "localhost,127.0.0.1,::1".to_owned()));
        }
    }
    let (uid, gid) = inside_ids();
    let plan = BoxPlan {
        version: PLAN_VERSION,
        session: inputs.session.to_owned(),
        bwrap: inputs.bwrap.to_owned(),
        helper,
        command: BoxCommand {
            program: program.real,
            argv0: inputs.program.to_string_lossy().into_owned(),
            args,
        },
        worktree: inputs.worktree.to_owned(),
        worktree_read_only: inputs.worktree_read_only,
        home,
        tmp,
        state: inputs.run_dir.join("box"),
        uid,
        gid,
        system,
        etc: ETC
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect(),
        tools,
        links,
        git: inputs
            .git
            .as_ref()
            .map(|dirs| crate::git_admin::git_dirs(dirs, inputs.worktree))
            .transpose()?,
        login,
        env,
        network,
        limits: inputs.limits,
        cgroup: inputs.cgroup.clone(),
        nested_sandbox: inputs.needs.nested_sandbox,
        deps: checkout_deps(inputs, caller_home.as_deref()),
    };
    plan.check()?;
    Ok(plan)
}

/// The person's checkout's dependency folders the worktree lacks (`deps.rs`): the checkout
/// is the folder whose `.git` is the repository's common git folder.
fn checkout_deps(inputs: &BoxInputs<'_>, caller_home: Option<&Path>) -> Vec<crate::plan::Mount> {
    let Some(common) = inputs.git.as_ref().map(|g| g.common.as_path()) else {
        return Vec::new();
    };
    match (common.file_name(), common.parent()) {
        (Some(name), Some(checkout)) if name == ".git" => {
            crate::deps::find(checkout, inputs.worktree, caller_home)
        }
        _ => Vec::new(),
    }
}

/// Where the state folder the variable `name` names lives in the box: a folder of the
/// private home (which the box makes and keeps for the session), so the agent makes it there.
fn state_dir(home: &Path, name: &str) -> Result<PathBuf> {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(Error::invalid_input(format!(
            "the agent's state variable {name:?} is not a plain variable name (letters, digits, \
             `_`): fix the agent's box needs"
        )));
    }
    Ok(home.join(format!(".state-{}", name.to_ascii_lowercase())))
}

/// A relative path that stays below its folder (no `..`, not absolute).
fn is_below(path: &Path) -> bool {
    path.components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The uid and gid inside: the caller's own, or [`UID_FOR_ROOT`] for root (never root).
pub fn inside_ids() -> (u32, u32) {
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    let fix = |id: u32| if id == 0 { UID_FOR_ROOT } else { id };
    (fix(uid), fix(gid))
}

/// The host's system folders: a link stays a link, a folder is bound.
fn system_paths() -> Vec<SystemPath> {
    SYSTEM
        .iter()
        .filter_map(|path| {
            let meta = std::fs::symlink_metadata(path).ok()?;
            let link = if meta.file_type().is_symlink() {
                Some(std::fs::read_link(path).ok()?)
            } else if meta.is_dir() {
                None
            } else {
                return None;
            };
            Some(SystemPath {
                path: PathBuf::from(path),
                link,
            })
        })
        .collect()
}

/// A PATH folder the box gets: absolute, there, and neither in nor above the caller's home
/// (nor anywhere its real path is).
fn is_tool_dir(dir: &Path, caller_home: Option<&Path>) -> bool {
    if !dir.is_absolute() || !dir.is_dir() || dir == Path::new("/") {
        return false;
    }
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    match caller_home {
        None => true,
        Some(home) => {
            let real_home = home.canonicalize().unwrap_or_else(|_| home.to_owned());
            [dir, real.as_path()].iter().all(|d| {
                !d.starts_with(home)
                    && !d.starts_with(&real_home)
                    && !home.starts_with(d)
                    && !real_home.starts_with(d)
            })
        }
    }
}

/// The host's symbolic links on the way to `path` outside the system folders (an install
/// linked into place: `agents/tool-1.2` → `.tool-1.2-abc`), added to `links` once each.
fn host_links(path: &Path, system: &[SystemPath], links: &mut Vec<SymLink>) {
    if !path.is_absolute() {
        return;
    }
    let mut prefix = PathBuf::new();
    for part in path.components() {
        if !matches!(
            part,
            std::path::Component::RootDir | std::path::Component::Normal(_)
        ) {
            return;
        }
        prefix.push(part);
        if system.iter().any(|s| prefix.starts_with(&s.path)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&prefix) else {
            return;
        };
        if meta.file_type().is_symlink()
            && let Ok(target) = std::fs::read_link(&prefix)
            && !links.iter().any(|l: &SymLink| l.path == prefix)
        {
            links.push(SymLink {
                path: prefix.clone(),
                target,
            });
        }
    }
}

/// Whether `path` is already visible through a bound system folder or tool.
fn covered(path: &Path, system: &[SystemPath], tools: &[PathBuf]) -> bool {
    // A link (`/bin` → `usr/bin`) leads into a bound folder: what is under it is there too.
    system.iter().any(|s| path.starts_with(&s.path)) || tools.iter().any(|t| path.starts_with(t))
}

/// With base URLs, their hosts and ports are the only endpoints: a loopback address is
/// listened on as it is, each name gets a loopback address of its own in the box's
/// `/etc/hosts`, so the URL the agent uses (and its transcripts show) is unchanged.
pub fn network_for_base_urls(urls: &[(&str, &str)]) -> Result<Network> {
    let mut network = Network::default();
    // A named host on a port below 1024 (a company gateway on 443) cannot be listened on in
    // the box (its processes have no capability, and a root caller's network namespace is
    // not the box's user's): it goes through the allow-list proxy instead, which the agent
    // reaches by `HTTPS_PROXY`, and the URL stays as it is.
    let mut proxied: Vec<HostPort> = Vec::new();
    for (var, url) in urls {
        let target = base_url_target(url).ok_or_else(|| {
            Error::invalid_input(format!(
                "{var} is {url:?}, which is not an http(s) URL with a host: set it like \"https://api.example.com\""
            ))
        })?;
        if network
            .endpoints
            .iter()
            .any(|e| e.to == Destination::Direct(target.clone()))
        {
            continue;
        }
        let listen_ip = match target.host.parse::<IpAddr>() {
            Ok(ip) if ip.is_loopback() => ip,
            Ok(_) => {
                return Err(Error::invalid_input(format!(
                    "{var} names the address {}; in the box a provider is reached by a host name \
                     or on loopback: give its host name, or pass --isolation none",
                    target.host
                )));
            }
            Err(_) if target.host == "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Err(_) if target.port < 1024 && url.starts_with("https://") => {
                if !proxied.contains(&target) {
                    proxied.push(target);
                }
                continue;
            }
            Err(_) => match network.hosts.iter().find(|h| h.name == target.host) {
                Some(entry) => entry.ip,
                None => {
                    let n = network.hosts.len() as u8;
                    let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + n));
                    network.hosts.push(HostEntry {
                        name: target.host.clone(),
                        ip,
                    });
                    ip
                }
            },
        };
        let n = network.endpoints.len();
        network.endpoints.push(Endpoint {
            listen: SocketAddr::new(listen_ip, target.port),
            socket: format!("provider-{n}.sock"),
            to: Destination::Direct(target),
        });
    }
    if !proxied.is_empty() {
        network.endpoints.push(Endpoint {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), PROXY_PORT),
            socket: "proxy.sock".into(),
            to: Destination::Proxy(proxied),
        });
    }
    Ok(network)
}

/// Without a base URL: the allow-list proxy, when the agent names hosts; else no network.
pub fn network_for_hosts(hosts: &[String]) -> Result<Network> {
    if hosts.is_empty() {
        return Ok(Network::default());
    }
    let allow = hosts
        .iter()
        .map(|h| HostPort::parse(h))
        .collect::<Result<Vec<_>>>()?;
    Ok(Network {
        endpoints: vec![Endpoint {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), PROXY_PORT),
            socket: "proxy.sock".into(),
            to: Destination::Proxy(allow),
        }],
        hosts: Vec::new(),
    })
}

/// The host and port of an http(s) URL (the scheme's port when it names none).
pub fn base_url_target(url: &str) -> Option<HostPort> {
    let (rest, default_port) = if let Some(rest) = url.strip_prefix("https://") {
        (rest, 443)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (rest, 80)
    } else {
        return None;
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let with_port = if authority.starts_with('[') {
        if authority.ends_with(']') {
            format!("{authority}:{default_port}")
        } else {
            authority.to_owned()
        }
    } else if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:{default_port}")
    };
    HostPort::parse(&with_port).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_give_host_and_port() {
        let t = |u: &str| base_url_target(u).map(|h| h.to_string());
        assert_eq!(
            t("http://127.0.0.1:8080/v1").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            t("https://api.example.com").as_deref(),
            Some("api.example.com:443")
        );
        assert_eq!(
            t("http://models.internal/x?y").as_deref(),
            Some("models.internal:80")
        );
        assert_eq!(
            t("http://user:pw@h.example:9/").as_deref(),
            Some("h.example:9")
        );
        assert_eq!(t("http://[::1]:8080/").as_deref(), Some("[::1]:8080"));
        assert_eq!(t("ftp://x"), None);
        assert_eq!(t("http://"), None);
    }

    #[test]
    fn a_loopback_base_url_is_listened_on_as_it_is() {
        let net = network_for_base_urls(&[("X_BASE_URL", "http://127.0.0.1:4000/v1")]).unwrap();
        assert_eq!(net.endpoints.len(), 1);
        assert_eq!(net.endpoints[0].listen, "127.0.0.1:4000".parse().unwrap());
        assert_eq!(
            net.endpoints[0].to,
            Destination::Direct(HostPort::parse("127.0.0.1:4000").unwrap())
        );
        assert!(net.hosts.is_empty());
    }

    #[test]
    fn a_named_base_url_gets_a_loopback_address_in_hosts() {
        let net = network_for_base_urls(&[
            ("X_BASE_URL", "https://models.internal:8443"),
            ("Y_BASE_URL", "http://other.internal:9000"),
            ("Z_BASE_URL", "https://models.internal:8443/v2"),
        ])
        .unwrap();
        assert_eq!(net.endpoints.len(), 2, "the same host and port once");
        assert_eq!(net.endpoints[1].listen, "127.0.0.3:9000".parse().unwrap());
        assert_eq!(net.endpoints[0].listen, "127.0.0.2:8443".parse().unwrap());
        assert_eq!(net.hosts[0].name, "models.internal");
        assert_eq!(
            net.endpoints[0].to,
            Destination::Direct(HostPort::parse("models.internal:8443").unwrap())
        );
    }

    #[test]
    fn a_named_https_base_url_on_a_privileged_port_goes_through_the_proxy() {
        let net = network_for_base_urls(&[
            ("X_BASE_URL", "https://gateway.example.com/v1"),
            ("Y_BASE_URL", "https://models.internal:8443"),
        ])
        .unwrap();
        assert_eq!(net.endpoints.len(), 2);
        assert_eq!(net.endpoints[0].listen, "127.0.0.2:8443".parse().unwrap());
        assert_eq!(net.endpoints[1].listen.port(), PROXY_PORT);
        assert_eq!(
            net.endpoints[1].to,
            Destination::Proxy(vec![HostPort::parse("gateway.example.com:443").unwrap()])
        );
        assert!(
            !net.hosts.iter().any(|h| h.name == "gateway.example.com"),
            "the proxy resolves it, not the box"
        );
    }

    #[test]
    fn a_base_url_at_a_remote_address_is_refused_with_the_way_out() {
        let err = network_for_base_urls(&[("X_BASE_URL", "http://10.1.2.3:80")]).unwrap_err();
        assert!(err.to_string().contains("--isolation none"), "{err}");
    }

    #[test]
    fn without_a_base_url_the_proxy_allows_the_agents_hosts_only() {
        let net = network_for_hosts(&["api.example.com:443".into()]).unwrap();
        assert_eq!(net.endpoints[0].listen.port(), PROXY_PORT);
        assert_eq!(
            net.endpoints[0].to,
            Destination::Proxy(vec![HostPort::parse("api.example.com:443").unwrap()])
        );
        assert!(network_for_hosts(&[]).unwrap().endpoints.is_empty());
        assert!(network_for_hosts(&["no-port".into()]).is_err());
    }

    #[test]
    fn a_state_variable_that_is_not_a_plain_name_is_refused() {
        let home = Path::new("/run/home");
        assert_eq!(
            state_dir(home, "VIBE_HOME").unwrap(),
            home.join(".state-vibe_home")
        );
        for bad in ["", "../x", "A/B", "A B"] {
            let err = state_dir(home, bad).unwrap_err().to_string();
            assert!(err.contains("not a plain variable name"), "{bad}: {err}");
        }
    }

    #[test]
    fn path_folders_in_or_above_the_callers_home_are_not_tools() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let bin = home.join(".local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let opt = dir.path().join("opt-bin");
        std::fs::create_dir_all(&opt).unwrap();
        assert!(!is_tool_dir(&bin, Some(&home)));
        assert!(!is_tool_dir(dir.path(), Some(&home)), "above the home");
        assert!(!is_tool_dir(Path::new("/"), Some(&home)));
        assert!(is_tool_dir(&opt, Some(&home)));
        let link = dir.path().join("link-bin");
        std::os::unix::fs::symlink(&bin, &link).unwrap();
        assert!(!is_tool_dir(&link, Some(&home)), "a link into the home");
        assert!(!is_tool_dir(Path::new("relative"), Some(&home)));
    }

    #[test]
    fn a_plan_binds_the_program_the_login_and_sets_the_private_home() {
        let dir = tempfile::tempdir().unwrap();
        let caller = dir.path().join("caller");
        std::fs::create_dir_all(caller.join(".agent")).unwrap();
        std::fs::write(caller.join(".agent/credentials.json"), "x").unwrap();
        let install = dir.path().join("install");
        std::fs::create_dir_all(install.join("bin")).unwrap();
        let program = install.join("bin/agent");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let run = dir.path().join("run");
        let worktree = dir.path().join("wt");
        let helper = std::env::current_exe().unwrap();
        let needs = BoxNeeds {
            read_only: vec![install.clone(), "/".into(), dir.path().to_owned()],
            login: vec![
                runner_contract::LoginFile::read_only(".agent/credentials.json"),
                runner_contract::LoginFile::copied(".missing.json"),
                runner_contract::LoginFile::read_only("../caller/.agent/credentials.json"),
            ],
            hosts: vec!["api.example.com:443".into()],
            base_url_envs: vec!["X_BASE_URL".into()],
            state_envs: vec!["AGENT_HOME".into()],
            nested_sandbox: false,
        };
        let env = vec![
            (
                "PATH".to_owned(),
                format!("/usr/bin:{}", caller.join("bin").display()),
            ),
            ("HOME".to_owned(), caller.display().to_string()),
        ];
        let plan = plan(&BoxInputs {
            session: "s",
            run_dir: &run,
            worktree: &worktree,
            worktree_read_only: false,
            helper: &helper,
            bwrap: Path::new("/usr/bin/bwrap"),
            program: &program,
            args: &["--x".into()],
            env: &env,
            needs: &needs,
            git: None,
            limits: Limits::default(),
            cgroup: None,
        })
        .unwrap();
        let install = install.canonicalize().unwrap();
        assert!(plan.tools.contains(&install), "{:?}", plan.tools);
        assert!(
            !plan
                .tools
                .iter()
                .any(|t| t == Path::new("/") || t == dir.path())
        );
        assert!(!plan.tools.iter().any(|t| t.starts_with(&caller)));
        assert_eq!(plan.login.len(), 1, "a missing login file is left out");
        assert_eq!(plan.login[0].dest, run.join("home/.agent/credentials.json"));
        assert!(
            plan.env
                .contains(&("HOME".into(), run.join("home").display().to_string()))
        );
        assert!(plan.env.iter().any(|(k, _)| k == "HTTPS_PROXY"));
        assert!(
            plan.env.contains(&(
                "AGENT_HOME".into(),
                run.join("home/.state-agent_home").display().to_string()
            )),
            "the agent's state folder is in the private home: {:?}",
            plan.env
        );
        assert_ne!(plan.uid, 0);
        assert_eq!(plan.command.args, ["--x"]);
    }

    #[test]
    fn the_hosts_links_on_the_way_to_a_path_are_made_again() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("venv/bin")).unwrap();
        let linked = dir.path().join("linked-venv");
        std::os::unix::fs::symlink("venv", &linked).unwrap();
        let mut links = Vec::new();
        host_links(&linked.join("bin/tool"), &[], &mut links);
        host_links(&linked.join("bin/other"), &[], &mut links);
        assert_eq!(
            links,
            vec![SymLink {
                path: linked,
                target: "venv".into()
            }],
            "once each"
        );
    }
}
