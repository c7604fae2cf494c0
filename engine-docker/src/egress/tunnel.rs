//! The box's end of its egress: the init listens on each forward's loopback address and
//! carries every connection to the proxy as `CONNECT target`, then copies bytes. The proxy may
//! still be starting when the agent first connects (a swarm starts the two services side by
//! side), so reaching it is tried for a while.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use agent_box::plan::HostPort;

use super::{EGRESS_ALIAS, EGRESS_PORT};

/// How long the proxy may take to be reachable.
const PROXY_WAIT: Duration = Duration::from_secs(60);
/// The largest answer head read from the proxy.
const MAX_HEAD: usize = 16 * 1024;

/// One `LISTEN=TARGET` argument of the init.
pub fn parse_forward(arg: &str) -> Result<(SocketAddr, HostPort), String> {
    let bad = || format!("{arg:?} is not LISTEN=HOST:PORT");
    let (listen, target) = arg.split_once('=').ok_or_else(bad)?;
    let listen: SocketAddr = listen.parse().map_err(|_| bad())?;
    if !listen.ip().is_loopback() {
        return Err(format!("{arg:?}: a box listens on loopback only"));
    }
    let target = HostPort::parse(target).map_err(|e| e.to_string())?;
    Ok((listen, target))
}

/// Listens on every forward's address; the connections are served on threads of their own
/// for as long as the process lives.
pub fn start(forwards: &[(SocketAddr, HostPort)]) -> Result<(), String> {
    for (listen, target) in forwards {
        let listener = TcpListener::bind(listen)
            .map_err(|e| format!("cannot listen on {listen} for {target}: {e}"))?;
        let target = target.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let target = target.clone();
                std::thread::spawn(move || tunnel(conn, &target));
            }
        });
    }
    Ok(())
}

fn tunnel(mut client: TcpStream, target: &HostPort) {
    let Some(mut proxy) = reach_proxy() else {
        return;
    };
    if write!(proxy, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").is_err() {
        return;
    }
    let mut head = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    let len = loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut answer = httparse::Response::new(&mut headers);
        match answer.parse(&head) {
            Ok(httparse::Status::Complete(len)) if answer.code == Some(200) => break len,
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => {}
            // Refused (off the allow list, or the target is down): the agent sees its
            // connection closed, as it would with no route.
            _ => return,
        }
        match proxy.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    };
    if client.write_all(&head[len..]).is_err() {
        return;
    }
    agent_box::relay::pump(client, proxy);
}

fn reach_proxy() -> Option<TcpStream> {
    let start = Instant::now();
    loop {
        let found = (EGRESS_ALIAS, EGRESS_PORT)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| {
                addrs.find_map(|a| TcpStream::connect_timeout(&a, Duration::from_secs(5)).ok())
            });
        if found.is_some() || start.elapsed() > PROXY_WAIT {
            return found;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forward_listens_on_loopback_and_names_a_target() {
        let (listen, target) = parse_forward("127.0.0.2:443=api.example.com:443").unwrap();
        assert_eq!(listen, "127.0.0.2:443".parse().unwrap());
        assert_eq!(target, HostPort::parse("api.example.com:443").unwrap());
        assert!(parse_forward("0.0.0.0:443=api.example.com:443").is_err());
        assert!(parse_forward("127.0.0.2:443").is_err());
        assert!(parse_forward("127.0.0.2:443=nowhere").is_err());
    }
}
