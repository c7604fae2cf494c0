//! The outer end of the allow-list proxy: it reads one HTTP CONNECT head (with `httparse`,
//! never a parser of ours), connects only to a host and port on the allow list, and then
//! copies bytes; everything else gets an error status and the connection is closed.
//!
//! It runs outside the box, on the unix socket the box's init forwards `127.0.0.1:PORT` to.
//! An agent that ignores `HTTPS_PROXY` reaches nothing: its namespace has no other way out.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::plan::HostPort;

/// The largest CONNECT head read; a longer one is refused.
pub const MAX_HEAD: usize = 16 * 1024;

/// How long a connection to an allowed host may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// What one CONNECT head asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Head {
    /// Not complete yet: read more.
    Partial,
    /// A CONNECT to this host and port; `len` bytes of the buffer were the head.
    Connect {
        /// Where to.
        target: HostPort,
        /// The head's length (bytes after it belong to the tunnel).
        len: usize,
    },
    /// Anything else: the status line to answer with.
    Refused(&'static str),
}

/// Reads the head at the start of `bytes`.
pub fn parse_head(bytes: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Partial) if bytes.len() >= MAX_HEAD => {
            Head::Refused("431 Request Header Fields Too Large")
        }
        Ok(httparse::Status::Partial) => Head::Partial,
        Err(_) => Head::Refused("400 Bad Request"),
        Ok(httparse::Status::Complete(len)) => {
            if request.method != Some("CONNECT") {
                return Head::Refused("405 Method Not Allowed");
            }
            match request.path.map(HostPort::parse) {
                Some(Ok(target)) => Head::Connect { target, len },
                _ => Head::Refused("400 Bad Request"),
            }
        }
    }
}

/// Serves one connection from the box: the CONNECT head, the allow list, then the tunnel.
pub fn serve<S: crate::relay::Duplex>(mut client: S, allow: &[HostPort]) {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let (target, len) = loop {
        match parse_head(&buffer) {
            Head::Connect { target, len } => break (target, len),
            Head::Refused(status) => return refuse(client, status, "the proxy takes CONNECT"),
            Head::Partial => match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            },
        }
    };
    if !allow.contains(&target) {
        let why = format!("{target} is not on this box's allow list");
        return refuse(client, "403 Forbidden", &why);
    }
    let Some(upstream) = connect(&target) else {
        let why = format!("cannot connect to {target}");
        return refuse(client, "502 Bad Gateway", &why);
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .is_err()
    {
        return;
    }
    // Bytes the client sent right after the head (a TLS hello) belong to the tunnel.
    let early = &buffer[len..];
    let mut up = upstream;
    if !early.is_empty() && up.write_all(early).is_err() {
        return;
    }
    crate::relay::pump(client, up);
}

/// Connects to a host and port (resolved outside the box), trying each address.
pub fn connect(target: &HostPort) -> Option<TcpStream> {
    use std::net::ToSocketAddrs;
    let addrs = (target.host.as_str(), target.port).to_socket_addrs().ok()?;
    addrs
        .into_iter()
        .find_map(|addr| TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).ok())
}

fn refuse<S: Write>(mut client: S, status: &str, why: &str) {
    let body = format!("codehands box: {why}\n");
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::os::unix::net::UnixStream;

    fn hp(text: &str) -> HostPort {
        HostPort::parse(text).unwrap()
    }

    #[test]
    fn a_connect_head_names_its_target_and_length() {
        let head = b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\nTLS";
        assert_eq!(
            parse_head(head),
            Head::Connect {
                target: hp("api.example.com:443"),
                len: head.len() - 3
            }
        );
    }

    #[test]
    fn a_partial_head_asks_for_more_and_an_endless_one_is_refused() {
        assert_eq!(parse_head(b"CONNECT a:1 HTTP/1.1\r\n"), Head::Partial);
        let long = [b"CONNECT a:1 HTTP/1.1\r\nX: ".as_slice(), &[b'a'; MAX_HEAD]].concat();
        assert!(matches!(parse_head(&long), Head::Refused(s) if s.starts_with("431")));
    }

    #[test]
    fn other_methods_and_targets_are_refused() {
        let get = b"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n";
        assert!(matches!(parse_head(get), Head::Refused(s) if s.starts_with("405")));
        let no_port = b"CONNECT evil.example HTTP/1.1\r\n\r\n";
        assert!(matches!(parse_head(no_port), Head::Refused(s) if s.starts_with("400")));
        assert!(matches!(
            parse_head(b"\x16\x03\x01garbage\r\n\r\n"),
            Head::Refused(_)
        ));
    }

    /// Runs `serve` on one end of a socket pair, sends `request` on the other, and returns
    /// what came back.
    fn exchange(request: &[u8], allow: Vec<HostPort>) -> String {
        let (near, far) = UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || serve(far, &allow));
        let mut near_w = near.try_clone().unwrap();
        near_w.write_all(request).unwrap();
        let mut out = Vec::new();
        let mut reader = near;
        let mut chunk = [0u8; 1024];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    out.extend_from_slice(&chunk[..n]);
                    if out.windows(4).any(|w| w == b"pong") {
                        break;
                    }
                }
            }
        }
        drop(near_w);
        drop(reader);
        let _ = server.join();
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn a_target_off_the_list_is_forbidden() {
        let answer = exchange(
            b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n",
            vec![hp("api.example.com:443")],
        );
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.contains("127.0.0.1:9 is not on this box's allow list"));
    }

    #[test]
    fn an_allowed_target_is_tunnelled_with_the_bytes_sent_early() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let echo = std::thread::spawn(move || {
            let (mut conn, _) = server.accept().unwrap();
            let mut got = [0u8; 4];
            conn.read_exact(&mut got).unwrap();
            assert_eq!(&got, b"ping");
            conn.write_all(b"pong").unwrap();
        });
        let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nping");
        let answer = exchange(request.as_bytes(), vec![hp(&format!("127.0.0.1:{port}"))]);
        assert!(
            answer.starts_with("HTTP/1.1 200 Connection Established\r\n\r\n"),
            "{answer}"
        );
        assert!(answer.ends_with("pong"), "{answer}");
        echo.join().unwrap();
    }
}
