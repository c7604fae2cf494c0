//! `codehands __remote-egress PORT TARGET…`: the box's egress proxy. It listens on `PORT` of
//! every address it has (the box's network among them) and serves each connection with the
//! local box's CONNECT proxy (`agent_box::proxy`: the head read by `httparse`, a target off
//! the allow list refused with 403), one thread per connection: a box makes a handful.

use std::ffi::OsString;
use std::net::TcpListener;

use agent_box::plan::HostPort;

/// Runs the proxy until the engine removes it; 2 on bad arguments, 125 when it cannot listen.
pub fn main(args: &[OsString]) -> i32 {
    let parsed = parse(args);
    let (port, allow) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("codehands egress: {e}");
            return 2;
        }
    };
    let listener = match TcpListener::bind(("0.0.0.0", port)) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("codehands egress: cannot listen on port {port}: {e}");
            return 125;
        }
    };
    let allow = std::sync::Arc::new(allow);
    for conn in listener.incoming().flatten() {
        let allow = allow.clone();
        std::thread::spawn(move || agent_box::proxy::serve(conn, &allow));
    }
    0
}

fn parse(args: &[OsString]) -> Result<(u16, Vec<HostPort>), String> {
    let usage = "usage: __remote-egress PORT HOST:PORT…";
    let (port, targets) = args.split_first().ok_or(usage)?;
    let port = port
        .to_str()
        .and_then(|p| p.parse::<u16>().ok())
        .ok_or(usage)?;
    let allow = targets
        .iter()
        .map(|t| {
            t.to_str()
                .ok_or_else(|| usage.to_owned())
                .and_then(|t| HostPort::parse(t).map_err(|e| e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((port, allow))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_and_allow_list_are_read_strictly() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let (port, allow) = parse(&args(&["3128", "api.example.com:443"])).unwrap();
        assert_eq!(port, 3128);
        assert_eq!(allow, [HostPort::parse("api.example.com:443").unwrap()]);
        assert!(parse(&args(&[])).is_err());
        assert!(parse(&args(&["x"])).is_err());
        assert!(parse(&args(&["3128", "no-port"])).is_err());
    }
}
