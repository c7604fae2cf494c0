//! `cargo xtask images`: builds the sandbox's images locally, since nothing can
//! be pulled on our machines.
//!
//! - `LOCAL_BUSYBOX_IMAGE` (`codehands/sandbox-busybox:1`): `FROM scratch` with Debian's static busybox, for the fast cases.
//! - `LOCAL_DEBIAN_IMAGE` (`codehands/sandbox-debian:3`): a Debian bookworm root made with `debootstrap`, with
//!   nodejs, npm, python3 (venv, pytest), cargo and tzdata, loaded with `docker import`.
//!
//! Each is skipped when the engine has its tag; otherwise it is loaded from the
//! `docker save` tarball under `$CODEHANDS_CACHE/images/` when there is one, and
//! built (then saved there) only when neither exists. Building the Debian root
//! needs root (debootstrap, chroot) and the Debian mirror.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sandbox_docker::{LOCAL_BUSYBOX_IMAGE, LOCAL_DEBIAN_IMAGE};

/// What goes into the Debian image on top of the minimal base.
const DEBIAN_PACKAGES: &[&str] = &[
    "nodejs",
    "npm",
    "python3",
    "python3-pytest",
    "python3-venv",
    "python-is-python3",
    "cargo",
];
const PATH_ENV: &str = "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(arg) = args.first() {
        return Err(format!("images takes no arguments, got {arg:?}"));
    }
    let dir = cache_dir().join("images");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    docker(&["version", "--format", "{{.Server.Version}}"])
        .map_err(|e| format!("the Docker engine does not answer ({e}): start it and try again"))?;
    provide(LOCAL_BUSYBOX_IMAGE, &dir, build_busybox)?;
    provide(LOCAL_DEBIAN_IMAGE, &dir, build_debian)?;
    Ok(())
}

/// `$CODEHANDS_CACHE`, or `~/.cache/codehands`.
fn cache_dir() -> PathBuf {
    match std::env::var_os("CODEHANDS_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into()))
            .join(".cache/codehands"),
    }
}

/// Makes sure the engine has `tag`: already there, loaded from the cache, or built and cached.
fn provide(
    tag: &str,
    dir: &Path,
    build: fn(&str, &Path) -> Result<(), String>,
) -> Result<(), String> {
    let saved = dir.join(format!("{}.tar", tag.replace(['/', ':'], "-")));
    if docker(&["image", "inspect", "--format", "{{.Id}}", tag]).is_ok() {
        println!("images: {tag} is on the engine already");
        if !saved.is_file() {
            // So that a fresh engine (or a pruned one) loads it instead of building it.
            save(tag, &saved)?;
        }
        return Ok(());
    }
    if saved.is_file() {
        println!("images: loading {tag} from {}", saved.display());
        docker(&["load", "--quiet", "--input", &saved.to_string_lossy()])?;
        if docker(&["image", "inspect", tag]).is_ok() {
            return Ok(());
        }
        println!(
            "images: {} did not hold {tag}; building it again",
            saved.display()
        );
    }
    println!("images: building {tag}");
    let work = tempfile::Builder::new()
        .prefix("build-")
        .tempdir_in(dir)
        .map_err(|e| format!("cannot make a build folder in {}: {e}", dir.display()))?;
    build(tag, work.path())?;
    save(tag, &saved)?;
    println!("images: built {tag}");
    Ok(())
}

/// `docker save` into the cache, through a temporary name so a cut-off save is never loaded.
fn save(tag: &str, saved: &Path) -> Result<(), String> {
    let partial = saved.with_extension("tar.partial");
    docker(&["save", "--output", &partial.to_string_lossy(), tag])?;
    std::fs::rename(&partial, saved)
        .map_err(|e| format!("cannot save {}: {e}", saved.display()))?;
    println!("images: saved {tag} to {}", saved.display());
    Ok(())
}

/// `FROM scratch` with a static busybox and its applets as links in /bin.
fn build_busybox(tag: &str, work: &Path) -> Result<(), String> {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file() && is_static(p))
        .map(Path::to_path_buf);
    let busybox = match busybox {
        Some(path) => path,
        None => download_busybox(work)?,
    };
    let root = work.join("root");
    for sub in ["bin", "etc", "tmp", "work"] {
        std::fs::create_dir_all(root.join(sub)).map_err(|e| e.to_string())?;
    }
    // The engine copies this mode onto the tmpfs mounted over /tmp: everyone may write there.
    std::fs::set_permissions(
        root.join("tmp"),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .map_err(|e| e.to_string())?;
    std::fs::copy(&busybox, root.join("bin/busybox"))
        .map_err(|e| format!("cannot copy busybox: {e}"))?;
    let list = output(Command::new(&busybox).arg("--list"))?;
    for applet in list.lines().filter(|a| !a.is_empty() && *a != "busybox") {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))
            .map_err(|e| e.to_string())?;
    }
    std::fs::write(
        root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    )
    .and_then(|()| std::fs::write(root.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n"))
    .map_err(|e| e.to_string())?;
    import(&root, tag)
}

/// Debian's busybox-static, unpacked into `work` (the host keeps its own busybox).
fn download_busybox(work: &Path) -> Result<PathBuf, String> {
    let download = || {
        status(
            Command::new("apt-get")
                .args(["download", "-q", "busybox-static"])
                .current_dir(work),
        )
    };
    if download().is_err() {
        if !is_root() {
            return Err(
                "no static busybox: install busybox-static, or run as root so apt can fetch it"
                    .into(),
            );
        }
        status(Command::new("apt-get").args(["update", "-q"]))?;
        download()?;
    }
    let deb = std::fs::read_dir(work)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or("apt-get download left no busybox-static package")?;
    let unpacked = work.join("busybox-static");
    status(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))?;
    Ok(unpacked.join("bin/busybox"))
}

/// A Debian bookworm minbase root plus [`DEBIAN_PACKAGES`], trimmed.
fn build_debian(tag: &str, work: &Path) -> Result<(), String> {
    if !is_root() {
        return Err(format!(
            "building {tag} needs root (debootstrap and chroot); run `cargo xtask images` as root, \
             or load a saved image with `docker load -i FILE`"
        ));
    }
    if Command::new("debootstrap")
        .arg("--version")
        .output()
        .is_err()
    {
        apt_install(&["debootstrap"])?;
    }
    let mirror =
        std::env::var("DEBIAN_MIRROR").unwrap_or_else(|_| "http://deb.debian.org/debian".into());
    let root = work.join("root");
    println!("images: debootstrap bookworm from {mirror} (a few minutes)");
    status(
        Command::new("debootstrap")
            .args(["--variant=minbase", "--include=tzdata", "bookworm"])
            .arg(&root)
            .arg(&mirror),
    )?;
    // debootstrap's own resolver misses npm's virtual dependencies; apt inside the root does not.
    println!(
        "images: installing {} in the root",
        DEBIAN_PACKAGES.join(" ")
    );
    status(
        Command::new("chroot")
            .arg(&root)
            .args(["apt-get", "install", "-y", "-q", "--no-install-recommends"])
            .args(DEBIAN_PACKAGES)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    status(Command::new("chroot").arg(&root).args(["apt-get", "clean"]))?;
    for dir in [
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
        "var/log",
    ] {
        let path = root.join(dir);
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(root.join("work")).map_err(|e| e.to_string())?;
    import(&root, tag)?;
    // The root holds device-less files owned by root; remove it now rather than at drop.
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

/// `tar -C root -c . | docker import - tag`, without a shell.
fn import(root: &Path, tag: &str) -> Result<(), String> {
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(root)
        .args(["--numeric-owner", "-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let stdout = tar.stdout.take().ok_or("tar gave no output")?;
    let imported = Command::new("docker")
        .args([
            "import",
            "--change",
            PATH_ENV,
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            "WORKDIR /work",
        ])
        .args(["--change", "CMD [\"sh\"]", "-", tag])
        .stdin(Stdio::from(stdout))
        .output()
        .map_err(|e| format!("cannot run docker import: {e}"))?;
    let tar_status = tar.wait().map_err(|e| e.to_string())?;
    if !tar_status.success() {
        return Err(format!("tar of {} failed: {tar_status}", root.display()));
    }
    if !imported.status.success() {
        return Err(format!(
            "docker import {tag} failed: {}",
            String::from_utf8_lossy(&imported.stderr).trim()
        ));
    }
    Ok(())
}

fn apt_install(packages: &[&str]) -> Result<(), String> {
    if !is_root() {
        return Err(format!(
            "{} is missing: install it (apt-get install {})",
            packages.join(" "),
            packages.join(" ")
        ));
    }
    println!("images: apt-get install {}", packages.join(" "));
    status(
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .or_else(|_| {
        status(Command::new("apt-get").args(["update", "-q"]))?;
        status(
            Command::new("apt-get")
                .args(["install", "-y", "-q"])
                .args(packages)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
    })
}

fn is_static(path: &Path) -> bool {
    // A dynamic busybox would not run in a scratch image; `ldd` says "not a dynamic executable".
    Command::new("ldd")
        .arg(path)
        .output()
        .map(|o| {
            !o.status.success() || String::from_utf8_lossy(&o.stdout).contains("not a dynamic")
        })
        .unwrap_or(false)
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_ok_and(|id| id.trim() == "0")
}

fn docker(args: &[&str]) -> Result<String, String> {
    output(Command::new("docker").args(args))
}

fn output(command: &mut Command) -> Result<String, String> {
    let out = command
        .output()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn status(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed: {status}"))
    }
}
