//! Copying a connection both ways, with plain threads: a box has a handful of connections
//! (the agent's model calls), so a thread per direction costs nothing that matters.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

/// A connection that can be read and written from two threads, and half closed.
pub trait Duplex: Read + Write + Send + Sized + 'static {
    /// A second handle on the same connection.
    fn another(&self) -> std::io::Result<Self>;
    /// Says "no more bytes" to the peer, keeping the other direction open.
    fn close_write(&self);
}

impl Duplex for TcpStream {
    fn another(&self) -> std::io::Result<Self> {
        self.try_clone()
    }

    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

impl Duplex for UnixStream {
    fn another(&self) -> std::io::Result<Self> {
        self.try_clone()
    }

    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

/// Copies `a` to `b` and `b` to `a` until both directions have ended; each end is half
/// closed when its source ends, so a request/response over one connection finishes cleanly.
pub fn pump<A: Duplex, B: Duplex>(a: A, b: B) {
    let (Ok(a2), Ok(b2)) = (a.another(), b.another()) else {
        return;
    };
    let back = std::thread::spawn(move || copy_then_close(b2, a2));
    copy_then_close(a, b);
    let _ = back.join();
}

fn copy_then_close<R: Duplex, W: Duplex>(mut from: R, mut to: W) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.flush();
    to.close_write();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_go_both_ways_and_a_half_close_reaches_the_peer() {
        let (client, near) = UnixStream::pair().unwrap();
        let (far, mut server) = UnixStream::pair().unwrap();
        let relay = std::thread::spawn(move || pump(near, far));
        let mut client_w = client.try_clone().unwrap();
        client_w.write_all(b"ping").unwrap();
        client.close_write();
        let mut got = String::new();
        server.read_to_string(&mut got).unwrap();
        assert_eq!(got, "ping");
        server.write_all(b"pong").unwrap();
        server.close_write();
        let mut back = String::new();
        let mut client_r = client;
        client_r.read_to_string(&mut back).unwrap();
        assert_eq!(back, "pong");
        relay.join().unwrap();
    }
}
