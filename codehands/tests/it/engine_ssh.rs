//! `DOCKER_HOST=ssh://USER@HOST:PORT`: the engine reached the way the Docker CLI reaches it,
//! each connection `ssh … docker system dial-stdio`. The far end is an sshd of the test's own
//! on loopback (Debian's openssh-server), whose `docker` speaks to this machine's engine; the
//! caller's ssh setup (its key and known host) is a config file its `ssh` on PATH is given.

use crate::support;
use crate::support::remote;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use remote::{TestImage, codehands, docker, docker_ready, run_kept, types};
use support::{World, run, text};

/// An sshd on 127.0.0.1 that lets the test's key in as this user, killed when dropped.
struct Sshd {
    child: Child,
    port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen (openssh-client)");
    assert!(made.success());
}

/// The sshd, and a folder holding an `ssh` that takes the test's config (the caller's
/// `~/.ssh/config` in real life) for the PATH of the caller.
fn sshd(dir: &Path) -> Option<(Sshd, std::path::PathBuf)> {
    let sshd = Path::new("/usr/sbin/sshd");
    if !sshd.is_file() {
        runner_testkit::skip("no /usr/sbin/sshd: `apt-get install openssh-server`");
        return None;
    }
    keygen(&dir.join("host_key"));
    keygen(&dir.join("client_key"));
    std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPidFile none\nStrictModes no\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             PermitRootLogin prohibit-password\n",
            dir = dir.display()
        ),
    )
    .unwrap();
    // sshd wants its privilege separation folder.
    let _ = std::fs::create_dir_all("/run/sshd");
    let child = Command::new(sshd)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let host_key = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
    std::fs::write(
        dir.join("known_hosts"),
        format!("[127.0.0.1]:{port} {host_key}"),
    )
    .unwrap();
    let client = dir.join("ssh_config");
    std::fs::write(
        &client,
        format!(
            "Host 127.0.0.1\n  IdentityFile {dir}/client_key\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {dir}/known_hosts\n  StrictHostKeyChecking yes\n",
            dir = dir.display()
        ),
    )
    .unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("ssh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"\n",
            client.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sshd = Sshd { child, port };
    // Listening once `ssh … true` gets in: bounded by sshd's own start, each try a second.
    let mut tries = 0;
    loop {
        let ok = Command::new(&wrapper)
            .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-p"])
            .arg(port.to_string())
            .args(["root@127.0.0.1", "true"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            break;
        }
        tries += 1;
        assert!(
            tries < 30,
            "the test's sshd on port {port} does not let us in"
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    Some((sshd, bin))
}

#[test]
fn an_engine_reached_over_ssh_runs_what_the_local_socket_runs() {
    if !docker_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((sshd, bin)) = sshd(dir.path()) else {
        return;
    };
    let image = TestImage::build();
    let world = World::demo();
    let host = format!("ssh://root@127.0.0.1:{}", sshd.port);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let ch = |host: Option<&str>| {
        let mut cmd = codehands(&world, "replay", 0, host, &image.tag);
        cmd.env("PATH", &path);
        cmd
    };
    let local_id = runner_contract::SessionId::new_random().to_string();
    let local = run_kept(&mut ch(None), "docker", &local_id);
    let id = runner_contract::SessionId::new_random().to_string();
    let over_ssh = run_kept(&mut ch(Some(&host)), "docker", &id);
    assert_eq!(types(&over_ssh), types(&local), "the same events over ssh");
    let diff = text(&run(ch(Some(&host)).args(["diff", &id])).stdout);
    assert!(diff.contains("getMonth() + 1"), "{diff}");
    let report = text(&run(ch(Some(&host)).args(["report", &id])).stdout);
    assert!(report.contains("remote box (docker): create"), "{report}");
    let left = || {
        docker(&[
            "ps",
            "-aq",
            "--filter",
            &format!("label=codehands.session={id}"),
        ])
        .unwrap_or_default()
    };
    remote::wait_while_removing(&world, &id);
    assert_eq!(left().trim(), "", "the box is gone from the engine");
    assert!(run(ch(Some(&host)).args(["reject", &id])).status.success());

    // A host that is not ssh://[USER@]HOST[:PORT] is refused before anything is made.
    let out = run(ch(Some("ssh://root@127.0.0.1/engine")).args([
        "run", ".", "Fix it.", "--agent", "fake", "--engine", "docker",
    ]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is not ssh://[USER@]HOST[:PORT]"),
        "{}",
        text(&out.stderr)
    );
}
