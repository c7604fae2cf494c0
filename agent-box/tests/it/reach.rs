//! What the box can reach: unix sockets of the host (under `/run`, `/var/run`, `/tmp` and the
//! home), hosts through the allow-list proxy, and the host after the run (a daemon).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use runner_contract::BoxNeeds;

use crate::harness::{Boxing, Place, for_each_caller, probe, probe_with};

/// A unix socket listening at `path` that anyone may connect to; removed on drop.
struct Socket(PathBuf);

impl Socket {
    fn listen(path: PathBuf) -> Self {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut conn = conn;
                let _ = conn.write_all(b"socket-reached\n");
            }
        });
        Self(path)
    }
}

/// A unix socket in the abstract namespace (no file: only a network namespace bounds it)
/// that answers every connection; its name.
fn abstract_socket(name: &str) -> String {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let _ = conn.write_all(b"socket-reached\n");
        }
    });
    name.to_owned()
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Connects to every unix socket under `dirs` (those of the box's own relays aside, which
/// the proxy probes try); exits 0 when one answered.
fn every_socket(dirs: &[&Path]) -> String {
    let dirs = dirs
        .iter()
        .map(|d| format!("'{}'", d.display()))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        r#"/usr/bin/python3 - {dirs} <<'PY'
import os, socket, stat, sys
reached = []
for top in sys.argv[1:]:
    for root, dirs, files in os.walk(top):
        if root.startswith("/run/codehands"):
            continue
        for name in files + dirs:
            path = os.path.join(root, name)
            try:
                if not stat.S_ISSOCK(os.lstat(path).st_mode):
                    continue
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(2)
                s.connect(path)
                reached.append(path)
            except OSError:
                pass
print("reached:", reached)
sys.exit(0 if reached else 1)
PY"#
    )
}

#[test]
fn no_unix_socket_of_the_host_answers_in_the_box() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        let tag = format!("{}-{}", std::process::id(), caller.name);
        // One socket of our own in each place a real one lives, so the control has one to
        // reach whoever runs it (the host's own, Docker's among them, are tried too).
        let _sockets = [
            Socket::listen(PathBuf::from(format!("/run/codehands-hostile-{tag}.sock"))),
            Socket::listen(PathBuf::from(format!("/tmp/codehands-hostile-{tag}.sock"))),
            Socket::listen(place.home.join("agent.sock")),
        ];
        for dir in [
            Path::new("/run"),
            Path::new("/var/run"),
            Path::new("/tmp"),
            place.home.as_path(),
        ] {
            probe(
                &place,
                &format!("a unix socket under {}", dir.display()),
                &every_socket(&[dir]),
            );
        }
        let name = abstract_socket(&format!("codehands-hostile-{tag}"));
        probe(
            &place,
            "an abstract unix socket of the host",
            &format!(
                "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(\"\\0{name}\")'"
            ),
        );
    });
}

/// A TCP server on `ip` that answers every connection with an HTTP reply naming `what`.
fn server_on(ip: &str, what: &'static str) -> u16 {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let mut buf = [0u8; 512];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(format!("HTTP/1.0 200 OK\r\n\r\n{what}\n").as_bytes());
        }
    });
    port
}

/// Sends `request` (with `{target}` standing for `host:port`) to the proxy when the box has
/// one, else straight to the target as the control does; exits 0 when the reply shows the
/// attacker was reached.
fn through_proxy(host: &str, port: u16, request: &str) -> String {
    format!(
        r#"/usr/bin/python3 - <<'PY'
import os, socket, sys
host, port = "{host}", {port}
request = """{request}""".replace("{{target}}", "%s:%d" % (host, port)).replace("\n", "\r\n")
proxy = os.environ.get("HTTPS_PROXY")
try:
    if proxy:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    else:
        s = socket.create_connection((host, port), timeout=5)
    s.settimeout(5)
    s.sendall(request.encode())
    reply = b""
    while True:
        part = s.recv(4096)
        if not part:
            break
        reply += part
        if b"attacker-reached" in reply:
            break
        if proxy and reply.startswith(b"HTTP/1.1 200") and b"\r\n\r\n" in reply:
            # The tunnel is open: speak to the far end.
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            proxy = None
except OSError as e:
    print("refused:", e)
    sys.exit(1)
print(reply.decode(errors="replace"))
sys.exit(0 if b"attacker-reached" in reply else 1)
PY"#
    )
}

#[test]
fn the_proxy_reaches_its_allow_list_and_nothing_else() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        let allowed = server_on("127.0.0.2", "allowed-ok");
        let attacker = server_on("127.0.0.1", "attacker-reached");
        let other = server_on("127.0.0.3", "attacker-reached");
        let boxing = Boxing {
            needs: BoxNeeds {
                hosts: vec![format!("127.0.0.2:{allowed}")],
                ..BoxNeeds::default()
            },
            ..Boxing::default()
        };
        // The allowed host passes: the proxy works, so a refusal below is the allow list's.
        let allowed_ok = place.boxed_with(
            &through_proxy(
                "127.0.0.2",
                allowed,
                "CONNECT {target} HTTP/1.1\nHost: {target}\n\n",
            )
            .replace("attacker-reached", "allowed-ok"),
            &boxing,
        );
        assert_eq!(allowed_ok.code, 0, "the allowed host: {allowed_ok}");
        let connect = "CONNECT {target} HTTP/1.1\nHost: {target}\n\n";
        probe_with(
            &place,
            "another host through the proxy",
            &through_proxy("127.0.0.3", other, connect),
            &boxing,
        );
        // 127.0.0.1 written as one number, in hex and as an IPv4-mapped IPv6 address: each
        // is the machine itself, none is on the allow list.
        for spelled in ["2130706433", "0x7f000001", "127.1"] {
            probe_with(
                &place,
                &format!("the machine's loopback spelled {spelled}"),
                &through_proxy(spelled, attacker, connect),
                &boxing,
            );
        }
        probe_with(
            &place,
            "an absolute URI instead of CONNECT",
            &through_proxy(
                "127.0.0.3",
                other,
                "GET http://{target}/ HTTP/1.1\nHost: {target}\n\n",
            ),
            &boxing,
        );
        probe_with(
            &place,
            "the allowed host named in CONNECT, another in Host",
            &through_proxy(
                "127.0.0.3",
                other,
                &format!(
                    "CONNECT 127.0.0.2:{allowed} HTTP/1.1\nHost: {{target}}\n\nGET http://{{target}}/ HTTP/1.0\n\n"
                ),
            ),
            &boxing,
        );
    });
}

/// Whether a live process has `needle` in its command line.
fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        !zombie
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
    })
}

/// Waits (at most about 10 s) until no process has `needle` in its command line.
fn gone(needle: &str) -> bool {
    for _ in 0..500 {
        if !running(needle) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn no_daemon_outlives_the_box() {
    for_each_caller(|caller| {
        let place = Place::new(caller);
        let marker = format!("{}{}", 9000 + std::process::id() % 1000, caller.uid % 100);
        // Every way to leave the agent's process tree: a new session, a double fork, a
        // process that ignores the stop signals.
        let script = format!(
            "setsid sleep {marker}1 >/dev/null 2>&1 < /dev/null &
             (trap '' TERM HUP INT; sleep {marker}2 >/dev/null 2>&1 < /dev/null &) &
             nohup sleep {marker}3 >/dev/null 2>&1 < /dev/null &
             sleep 0.5; exit 0"
        );
        let control = place.unboxed(&script);
        assert_eq!(control.code, 0, "{control}");
        assert!(
            running(&format!("sleep {marker}1")),
            "the control leaves a daemon behind"
        );
        for n in 1..=3 {
            // The control's daemons go (they are the tester's own).
            let _ = std::process::Command::new("pkill")
                .args(["-KILL", "-f", &format!("sleep {marker}{n}")])
                .status();
            assert!(gone(&format!("sleep {marker}{n}")));
        }
        let boxed = place.boxed(&script);
        assert_eq!(boxed.code, 0, "{boxed}");
        for n in 1..=3 {
            assert!(
                gone(&format!("sleep {marker}{n}")),
                "as {}: a daemon outlived its box",
                caller.name
            );
        }
    });
}
