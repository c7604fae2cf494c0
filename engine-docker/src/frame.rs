//! What goes into a box and how its result comes out of a log.
//!
//! In: one tar, `inputs.tar`, holding `env` (the agent's variables, `NAME=value` each ended by
//! a NUL), `stdin` (the prompt the runner wrote) and `base.tar` (the tree, `remote-transfer`).
//! On an engine it is uploaded into the box's own folder before the box starts; on a swarm it
//! travels as Swarm secrets of [`SECRET_CHUNK`] bytes (kept in the managers' encrypted store and
//! on a tmpfs in the box, never in the task's env).
//!
//! Out, on a swarm (whose nodes the caller may not reach): the init prints the result tar on
//! stderr after the agent has exited, base64 in lines that start with [`RESULT_MARK`] and the
//! box's nonce (which the agent never sees, so it cannot forge them); the shim takes those lines
//! out of stderr and checks the tar as any other result. The agent's home follows under
//! [`home_nonce`]: the shim keeps it, never unpacked, for the session's next turn, whose box
//! starts from it (the agent's own record of the conversation, which a follow-up resumes).

use base64::Engine as _;

/// Swarm secrets hold up to 500 KB each.
pub const SECRET_CHUNK: usize = 480 * 1024;
/// The start of a result line on stderr.
pub const RESULT_MARK: &str = "\u{1e}codehands-result";
/// How many base64 characters a result line carries (log drivers cut lines at 16 KiB).
const LINE_CHARS: usize = 8000;
/// The variable the nonce travels in (inside `env`; the init takes it out before the agent
/// starts).
pub const NONCE_VAR: &str = "CODEHANDS_REMOTE_NONCE";

/// The inputs tar of a box.
pub fn inputs_tar(
    env: &[(String, String)],
    stdin: &[u8],
    base: &[u8],
    files: &[(String, Vec<u8>)],
    home: &[u8],
    login: &[LoginInput],
) -> Vec<u8> {
    let mut env_bytes = Vec::new();
    for (name, value) in env {
        env_bytes.extend_from_slice(name.as_bytes());
        env_bytes.push(b'=');
        env_bytes.extend_from_slice(value.as_bytes());
        env_bytes.push(0);
    }
    let mut builder = tar::Builder::new(Vec::new());
    let files = files
        .iter()
        .map(|(name, data)| (format!("files/{name}"), &data[..], 0o400));
    for (name, data, mode) in [
        ("env".to_owned(), &env_bytes[..], 0o400),
        ("stdin".to_owned(), stdin, 0o400),
        ("base.tar".to_owned(), base, 0o400),
        ("home.tar".to_owned(), home, 0o400),
    ]
    .into_iter()
    .chain(files)
    .chain(login.iter().map(|l| {
        let kind = if l.read_only { "login-ro" } else { "login-rw" };
        (format!("{kind}/{}", l.path), &l.bytes[..], 0o400)
    })) {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mtime(0);
        let _ = builder.append_data(&mut header, &name, data);
    }
    builder.into_inner().unwrap_or_default()
}

/// One of the agent's login files, for its home in the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginInput {
    /// Relative to the home (`.claude/.credentials.json`): plain names only, checked.
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Read-only in the box (and never sent back with the home), else a copy the agent keeps.
    pub read_only: bool,
}

/// Whether `path` may name a login file under the home: relative, plain names, no `..`.
pub fn is_home_path(path: &str) -> bool {
    !path.is_empty()
        && std::path::Path::new(path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// What a box is given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inputs {
    /// The agent's variables.
    pub env: Vec<(String, String)>,
    /// Its prompt, for its stdin.
    pub stdin: Vec<u8>,
    /// The base tree, a tar.
    pub base: Vec<u8>,
    /// The run's files for the agent (its notes), by name.
    pub files: Vec<(String, Vec<u8>)>,
    /// The agent's home as the box before left it (a tar; empty on a first turn).
    pub home: Vec<u8>,
    /// The agent's login files.
    pub login: Vec<LoginInput>,
}

/// The three parts of an inputs tar.
pub fn read_inputs(bytes: &[u8]) -> Result<Inputs, String> {
    use std::io::Read;
    let mut archive = tar::Archive::new(bytes);
    let (mut env, mut stdin, mut base) = (Vec::new(), Vec::new(), Vec::new());
    let mut files = Vec::new();
    let mut home = Vec::new();
    let mut login = Vec::new();
    let entries = archive
        .entries()
        .map_err(|e| format!("the box's inputs are unreadable: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("the box's inputs are unreadable: {e}"))?;
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let target = match name.as_str() {
            "env" => &mut env,
            "stdin" => &mut stdin,
            "base.tar" => &mut base,
            "home.tar" => &mut home,
            other => match other.strip_prefix("files/") {
                Some(file) if is_file_name(file) => {
                    files.push((file.to_owned(), Vec::new()));
                    &mut files.last_mut().expect("just pushed").1
                }
                _ => {
                    let (read_only, path) = match (
                        other.strip_prefix("login-ro/"),
                        other.strip_prefix("login-rw/"),
                    ) {
                        (Some(path), _) => (true, path),
                        (_, Some(path)) => (false, path),
                        _ => continue,
                    };
                    if !is_home_path(path) {
                        continue;
                    }
                    login.push(LoginInput {
                        path: path.to_owned(),
                        bytes: Vec::new(),
                        read_only,
                    });
                    &mut login.last_mut().expect("just pushed").bytes
                }
            },
        };
        entry
            .read_to_end(target)
            .map_err(|e| format!("the box's inputs are unreadable: {e}"))?;
    }
    let env = env
        .split(|b| *b == 0)
        .filter(|pair| !pair.is_empty())
        .filter_map(|pair| {
            let text = String::from_utf8_lossy(pair);
            text.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect();
    Ok(Inputs {
        env,
        stdin,
        base,
        files,
        home,
        login,
    })
}

/// A name a run's file may have in the box: letters, digits, `.`, `-`, `_`, not only dots.
pub fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().any(|c| c != '.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// The most the agent's home may weigh as it comes back (its conversation, for the next turn).
pub const HOME_CAP: usize = 64 << 20;

/// The nonce the home's lines carry, after the result's.
pub fn home_nonce(nonce: &str) -> String {
    format!("{nonce}.home")
}

/// The result lines of `tar` for `nonce`, each numbered, the last one saying how many bytes
/// and lines there are.
pub fn result_lines(nonce: &str, tar: &[u8]) -> Vec<String> {
    let text = base64::engine::general_purpose::STANDARD.encode(tar);
    let mut lines: Vec<String> = text
        .as_bytes()
        .chunks(LINE_CHARS)
        .enumerate()
        .map(|(i, chunk)| {
            format!(
                "{RESULT_MARK} {nonce} {i} {}",
                String::from_utf8_lossy(chunk)
            )
        })
        .collect();
    let count = lines.len();
    lines.push(format!("{RESULT_MARK}-end {nonce} {} {count}", tar.len()));
    lines
}

/// The line the init prints last: the agent's exit code, so the shim knows the turn's end from
/// the log, without waiting for the engine to report the task's.
pub fn exit_line(nonce: &str, code: i32) -> String {
    format!("{RESULT_MARK}-exit {nonce} {code}")
}

/// The box's last line on stdout, after the agent's (which ended): with the exit line on
/// stderr, the shim has both streams whole without waiting for the engine to say the task
/// ended (docs/remote-box.md, "Warm boxes").
pub fn stdout_end_line(nonce: &str) -> String {
    format!("{RESULT_MARK}-stdout-end {nonce}")
}

/// Collects the result from stderr lines, for one nonce. A line seen twice counts once, so
/// the same collector may read a log more than once (the shim reads a swarm's log as it comes
/// and again from its start once the task has ended: a line missing from one read is found in
/// the other).
#[derive(Debug, Default)]
pub struct ResultCollector {
    nonce: String,
    chunks: std::collections::BTreeMap<usize, String>,
    size: usize,
    expected: Option<(usize, usize)>,
    cap: usize,
    over: bool,
    exit_code: Option<i32>,
}

impl ResultCollector {
    /// A collector of up to `cap` bytes of result for `nonce`.
    pub fn new(nonce: &str, cap: usize) -> Self {
        Self {
            nonce: nonce.to_owned(),
            cap,
            ..Self::default()
        }
    }

    /// Takes `line` when it is one of ours (true), else leaves it to be passed on (false).
    pub fn take(&mut self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix(RESULT_MARK) else {
            return false;
        };
        if let Some(code) = rest
            .strip_prefix("-exit ")
            .and_then(|r| r.strip_prefix(self.nonce.as_str()))
            .and_then(|r| r.strip_prefix(' '))
        {
            self.exit_code = code.trim_end().parse().ok();
            return true;
        }
        let (end, rest) = match rest.strip_prefix("-end ") {
            Some(rest) => (true, rest),
            None => match rest.strip_prefix(' ') {
                Some(rest) => (false, rest),
                None => return false,
            },
        };
        let Some(payload) = rest
            .strip_prefix(self.nonce.as_str())
            .and_then(|r| r.strip_prefix(' '))
        else {
            return false;
        };
        let (first, second) = payload
            .trim_end()
            .split_once(' ')
            .unwrap_or((payload.trim_end(), ""));
        if end {
            self.expected = first.parse().ok().zip(second.parse().ok());
        } else if let Ok(index) = first.parse::<usize>() {
            if self.chunks.contains_key(&index) {
                return true;
            }
            self.size += second.len();
            if self.size > self.cap.saturating_mul(4) / 3 + 4 {
                self.over = true;
            } else {
                self.chunks.insert(index, second.to_owned());
            }
        }
        true
    }

    /// The agent's exit code, once the exit line came (after the result's lines).
    pub fn exit_code(&self) -> Option<i32> {
        self.exit_code
    }

    /// Whether the end line came (the box has sent its result, or what of it there was).
    pub fn ended(&self) -> bool {
        self.expected.is_some()
    }

    /// The result tar, once the end line came and every line with it.
    pub fn finish(self) -> Result<Vec<u8>, String> {
        if self.over {
            return Err(format!(
                "the box's result is over its cap ({} bytes): refused, nothing applied",
                self.cap
            ));
        }
        let Some((expected, lines)) = self.expected else {
            return Err(
                "the box sent no result (its log has no end line): nothing applied".to_owned(),
            );
        };
        if self.chunks.len() != lines
            || self.chunks.keys().next_back().map_or(0, |k| k + 1) != lines
        {
            return Err(format!(
                "the box's result is cut short ({} of {lines} lines): nothing applied",
                self.chunks.len()
            ));
        }
        let text: String = self.chunks.into_values().collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|e| format!("the box's result is not base64: {e}; nothing applied"))?;
        if bytes.len() != expected {
            return Err(format!(
                "the box's result is cut short ({} of {expected} bytes): nothing applied",
                bytes.len()
            ));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_and_results_round_trip() {
        let env = vec![("KEY".to_owned(), "a=b c".to_owned())];
        let files = vec![("0-notes.md".to_owned(), b"notes".to_vec())];
        let login = vec![LoginInput {
            path: ".agent/credentials.json".to_owned(),
            bytes: b"{}".to_vec(),
            read_only: true,
        }];
        let mut tar = inputs_tar(&env, b"prompt\n", b"base", &files, b"home", &login);
        assert_eq!(
            read_inputs(&tar).unwrap(),
            Inputs {
                env: env.clone(),
                stdin: b"prompt\n".to_vec(),
                base: b"base".to_vec(),
                files,
                home: b"home".to_vec(),
                login,
            }
        );
        // A file whose name would leave the box's folder is not taken.
        tar = inputs_tar(
            &env,
            b"",
            b"",
            &[("../x".to_owned(), b"x".to_vec())],
            b"",
            &[],
        );
        assert!(read_inputs(&tar).unwrap().files.is_empty());
        // Nor a login file whose path would leave the home.
        let escaping = LoginInput {
            path: "../../etc/passwd".to_owned(),
            bytes: b"x".to_vec(),
            read_only: true,
        };
        tar = inputs_tar(&env, b"", b"", &[], b"", &[escaping]);
        assert!(read_inputs(&tar).unwrap().login.is_empty());
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let mut collector = ResultCollector::new("n1", 1 << 20);
        assert!(!collector.take("an ordinary line"));
        assert!(!collector.take(&format!("{RESULT_MARK} other forged")));
        for line in result_lines("n1", &data) {
            assert!(collector.take(&line));
        }
        assert_eq!(collector.exit_code(), None);
        assert!(collector.take(&exit_line("n1", 3)));
        assert!(!collector.take(&exit_line("n2", 4)), "another box's exit");
        assert_eq!(collector.exit_code(), Some(3));
        assert_eq!(collector.finish().unwrap(), data);
    }

    #[test]
    fn a_short_or_oversized_result_is_refused() {
        let lines = result_lines("n", &[7u8; 30_000]);
        let mut short = ResultCollector::new("n", 1 << 20);
        short.take(&lines[1]);
        short.take(lines.last().unwrap());
        assert!(short.finish().unwrap_err().contains("cut short"));
        let mut capped = ResultCollector::new("n", 100);
        for line in &lines {
            capped.take(line);
        }
        assert!(capped.finish().unwrap_err().contains("over its cap"));
    }

    #[test]
    fn a_log_read_twice_gives_each_line_once_and_a_gap_is_filled_by_the_other_read() {
        let data: Vec<u8> = (0..30_000u32).map(|i| (i % 253) as u8).collect();
        let lines = result_lines("n", &data);
        assert!(lines.len() > 3);
        let mut collector = ResultCollector::new("n", 1 << 20);
        // The first read misses line 1; the second has everything.
        for (i, line) in lines.iter().enumerate() {
            if i != 1 {
                collector.take(line);
            }
        }
        for line in &lines {
            collector.take(line);
        }
        assert_eq!(collector.finish().unwrap(), data);
        // The home's lines are another collector's.
        let home = result_lines(&home_nonce("n"), b"home");
        let mut result = ResultCollector::new("n", 1 << 20);
        assert!(home.iter().all(|line| !result.take(line)));
    }
}
