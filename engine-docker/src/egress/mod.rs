//! The remote box's only way out: its provider, through an allow-list proxy of its own.
//!
//! A remote box sits on a network with no route out (an internal overlay on a swarm, an
//! internal bridge on an engine). The one other member of that network is the box's egress
//! proxy (`codehands __remote-egress`, the same image), which is also on a network that has a
//! route out and connects only to the hosts and ports on its allow list ([`proxy`], with the
//! local box's CONNECT proxy). Inside the box, the init listens on a loopback address per
//! provider endpoint and tunnels each connection through the proxy ([`tunnel`]), so the agent
//! needs no proxy support and its base URL is unchanged where it names a host (the engine maps
//! the name to that loopback address). An agent that ignores all of it reaches nothing: the
//! kernel has no route for it, and the proxy refuses every other target.

pub mod proxy;
pub mod tunnel;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use agent_box::plan::HostPort;
use agent_box::planner::base_url_target;
use runner_contract::{BoxNeeds, Engine, Error, Result};
use serde::{Deserialize, Serialize};

/// The proxy's name on the box's network.
pub const EGRESS_ALIAS: &str = "codehands-egress";
/// The port the proxy listens on.
pub const EGRESS_PORT: u16 = 3128;

/// Where the agent's provider is reached from its box.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Egress {
    /// What the init listens on inside the box, each leading to one target.
    pub forwards: Vec<Forward>,
    /// Names the engine maps to a loopback address in the box (`name ip`).
    pub hosts: Vec<(String, IpAddr)>,
    /// The agent's variables as the box has them (a base URL whose host is an address names
    /// its loopback listener instead).
    pub env: Vec<(String, String)>,
}

/// One provider endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Forward {
    /// Where the init listens, inside the box.
    pub listen: SocketAddr,
    /// Where the proxy connects, outside.
    pub target: HostPort,
}

impl Egress {
    /// The proxy's allow list.
    pub fn allow(&self) -> Vec<HostPort> {
        self.forwards.iter().map(|f| f.target.clone()).collect()
    }

    /// `LISTEN=TARGET` per forward, as the init's arguments take them.
    pub fn forward_args(&self) -> Vec<String> {
        self.forwards
            .iter()
            .map(|f| format!("{}={}", f.listen, f.target))
            .collect()
    }

    /// The loopback address of `target`'s host in the box (a new one when it has none yet).
    fn listen_for(&mut self, target: &HostPort) -> SocketAddr {
        if let Some(known) = self.forwards.iter().find(|f| f.target.host == target.host) {
            return SocketAddr::new(known.listen.ip(), target.port);
        }
        let hosts = self
            .forwards
            .iter()
            .map(|f| f.listen.ip())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + hosts as u8));
        SocketAddr::new(ip, target.port)
    }

    fn add(&mut self, target: HostPort) -> SocketAddr {
        let listen = self.listen_for(&target);
        if !self.forwards.iter().any(|f| f.target == target) {
            if target.host.parse::<IpAddr>().is_err()
                && !self.hosts.iter().any(|(name, _)| *name == target.host)
            {
                self.hosts.push((target.host.clone(), listen.ip()));
            }
            self.forwards.push(Forward { listen, target });
        }
        listen
    }
}

/// The egress of an agent that `needs` this on `engine`, its variables being `env`: the
/// base URLs that are set (else the vendor's hosts); none when it needs no network.
pub fn plan(needs: &BoxNeeds, env: &[(String, String)], engine: Engine) -> Result<Egress> {
    let var = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let mut egress = Egress::default();
    let base_urls: Vec<(&str, &str)> = needs
        .base_url_envs
        .iter()
        .filter_map(|name| var(name).map(|v| (name.as_str(), v)))
        .collect();
    if base_urls.is_empty() {
        for host in &needs.hosts {
            let target = HostPort::parse(host)?;
            refuse_loopback(&target, "the agent's host", host, engine)?;
            egress.add(target);
        }
        return Ok(egress);
    }
    for (name, url) in base_urls {
        let target = base_url_target(url).ok_or_else(|| {
            Error::invalid_input(format!(
                "{name} is {url:?}, which is not an http(s) URL with a host: set it like \"https://api.example.com\""
            ))
        })?;
        refuse_loopback(&target, name, url, engine)?;
        let is_address = target.host.parse::<IpAddr>().is_ok();
        let host = target.host.clone();
        let listen = egress.add(target);
        if is_address {
            egress.env.push((
                name.to_owned(),
                with_host(url, &host, &listen.ip().to_string()),
            ));
        }
    }
    Ok(egress)
}

/// A provider on the caller's loopback is on no node of the engine.
fn refuse_loopback(target: &HostPort, name: &str, value: &str, engine: Engine) -> Result<()> {
    let loopback = target.host == "localhost"
        || target.host.ends_with(".localhost")
        || target
            .host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        return Err(Error::invalid_input(format!(
            "{name} is {value:?}, on this machine's loopback, which a box on the {engine} engine \
             cannot reach: serve the provider on an address the engine's machines reach, or use \
             --engine local"
        )));
    }
    Ok(())
}

/// `url` with its host `host` (an address) replaced by `to`.
fn with_host(url: &str, host: &str, to: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let bracketed = format!("[{host}]");
    let rest = if rest.starts_with(&bracketed) {
        rest.replacen(&bracketed, to, 1)
    } else {
        rest.replacen(host, to, 1)
    };
    format!("{scheme}://{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(hosts: &[&str], base: &[&str]) -> BoxNeeds {
        BoxNeeds {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            base_url_envs: base.iter().map(|h| h.to_string()).collect(),
            ..BoxNeeds::default()
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn without_a_base_url_the_vendor_hosts_are_forwarded_by_name() {
        let egress = plan(
            &needs(&["api.anthropic.com:443"], &["ANTHROPIC_BASE_URL"]),
            &[],
            Engine::Swarm,
        )
        .unwrap();
        assert_eq!(
            egress.forward_args(),
            ["127.0.0.2:443=api.anthropic.com:443"]
        );
        assert_eq!(
            egress.hosts,
            [("api.anthropic.com".to_owned(), "127.0.0.2".parse().unwrap())]
        );
        assert!(egress.env.is_empty());
    }

    #[test]
    fn a_base_url_replaces_the_hosts_and_an_address_is_rewritten_to_its_listener() {
        let egress = plan(
            &needs(
                &["api.anthropic.com:443"],
                &["ANTHROPIC_BASE_URL", "X_BASE_URL"],
            ),
            &env(&[
                ("ANTHROPIC_BASE_URL", "http://172.18.0.1:4000/v1"),
                ("X_BASE_URL", "https://models.example:8443"),
            ]),
            Engine::Docker,
        )
        .unwrap();
        assert_eq!(
            egress.forward_args(),
            [
                "127.0.0.2:4000=172.18.0.1:4000",
                "127.0.0.3:8443=models.example:8443"
            ]
        );
        assert_eq!(
            egress.env,
            env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.2:4000/v1")])
        );
        assert_eq!(egress.hosts.len(), 1, "only the name is mapped");
        assert_eq!(
            egress.allow(),
            [
                HostPort::parse("172.18.0.1:4000").unwrap(),
                HostPort::parse("models.example:8443").unwrap()
            ]
        );
    }

    #[test]
    fn the_callers_loopback_is_refused_with_what_to_do() {
        for url in [
            "http://127.0.0.1:4000",
            "http://localhost:80",
            "http://[::1]:9",
        ] {
            let err = plan(
                &needs(&[], &["ANTHROPIC_BASE_URL"]),
                &env(&[("ANTHROPIC_BASE_URL", url)]),
                Engine::Swarm,
            )
            .unwrap_err();
            let err = err.to_string();
            assert!(err.contains("loopback"), "{url}: {err}");
            assert!(err.contains("--engine local"), "{url}: {err}");
        }
    }

    #[test]
    fn an_agent_without_hosts_or_base_url_gets_no_way_out() {
        assert_eq!(
            plan(&needs(&[], &[]), &[], Engine::Swarm).unwrap(),
            Egress::default()
        );
    }

    #[test]
    fn a_bracketed_address_is_rewritten_whole() {
        assert_eq!(
            with_host("http://[fd00::1]:80/x", "fd00::1", "127.0.0.2"),
            "http://127.0.0.2:80/x"
        );
    }
}
