//! The review page (`codehands ui`) in a real headless Chromium, driven through chromedriver
//! (WebDriver): a fake run appears in the list and streams its events live, its diff shows
//! and approve from the page commits it; a task of three fake attempts shows side by side and
//! approving one rejects the others; a refusal reads as the command line's; a request without
//! the key is refused; the events resume after the last seq a browser got.
//!
//! Screenshots of every view, at 1280x800 and at 390x844, are kept under
//! `target/tmp/ui-screenshots/` (`CARGO_TARGET_TMPDIR`).

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use support::{World, json_lines, ok, run, text};

/// The sizes every view is looked at: a laptop's window and a phone's.
const WIDE: (u32, u32) = (1280, 800);
const NARROW: (u32, u32) = (390, 844);

/// How long the page may take to show what is waited for.
const PATIENCE: Duration = Duration::from_secs(60);

/// `codehands` of `world` with the fake agent replaying, `delay_ms` between its lines.
fn codehands(world: &World, delay_ms: u64) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_FAKE_DELAY_MS", delay_ms.to_string())
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

/// A `codehands ui` this test started, ended when dropped.
struct Server {
    child: Child,
    /// The URL it printed, with its key.
    url: String,
    /// `127.0.0.1:PORT`.
    addr: String,
    token: String,
}

impl Server {
    fn start(world: &World) -> Self {
        let mut child = codehands(world, 0)
            .args(["ui", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "printed {url:?}");
        let rest = url.trim_start_matches("http://");
        let addr = rest[..rest.find('/').unwrap()].to_owned();
        let token = url[url.find("token=").unwrap() + 6..].to_owned();
        assert_eq!(token.len(), 64, "{url}");
        Self {
            child,
            url,
            addr,
            token,
        }
    }

    /// The page's URL with `fragment` (`#/s/ID`).
    fn at(&self, fragment: &str) -> String {
        format!("{}{fragment}", self.url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request to the server, read to its end: the status line, headers and body.
fn http(addr: &str, host: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_owned())
}

/// chromedriver and the Chromium it drives, ended when dropped.
struct Browser {
    client: Client,
    driver: Child,
    shots: PathBuf,
    name: &'static str,
}

/// The programs, or a skip with the reason (a failure under CI=true).
fn chromium() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    };
    match (find("chromedriver"), find("chromium")) {
        (Some(driver), Some(browser)) => Some((driver, browser)),
        _ => {
            runner_testkit::skip(
                "chromium and chromedriver are not installed: run `cargo xtask install` \
                 (Debian's chromium and chromium-driver)",
            );
            None
        }
    }
}

impl Browser {
    async fn open(name: &'static str) -> Option<Self> {
        let (driver_bin, browser_bin) = chromium()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": browser_bin,
                // Root in a container: Chromium's own sandbox cannot start there.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--hide-scrollbars",
                         format!("--window-size={},{}", WIDE.0, WIDE.1)],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        let browser = Self {
            client,
            driver,
            shots,
            name,
        };
        browser.size(WIDE).await;
        Some(browser)
    }

    /// Makes the page's viewport `width` x `height` (the window's size in headless Chromium).
    async fn size(&self, (width, height): (u32, u32)) {
        self.client.set_window_size(width, height).await.unwrap();
    }

    async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// Runs `script` in the page, its value.
    async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    /// Waits until `script`'s value passes `test`; fails with `what`, the last value and a
    /// screenshot.
    async fn until(&self, what: &str, script: &str, test: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let value = self.js(script).await;
            if test(&value) {
                return value;
            }
            if Instant::now() > deadline {
                self.shot("failure").await;
                panic!("the page never showed {what}: last {value}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks `css`, found again when the page redrew it between the find and the click
    /// (the live list and the task are redrawn as they change).
    async fn click(&self, css: &str) {
        let mut tries = 0;
        loop {
            let found = self.client.find(Locator::Css(css)).await;
            let clicked = match found {
                Ok(element) => element.click().await,
                Err(e) => Err(e),
            };
            match clicked {
                Ok(()) => return,
                Err(e) if tries < 20 => {
                    tries += 1;
                    eprintln!("click {css}: {e}; again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("cannot click {css}: {e}"),
            }
        }
    }

    async fn type_in(&self, css: &str, keys: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(keys).await.unwrap();
    }

    /// The notice's text once it shows one.
    async fn notice(&self) -> String {
        let script = "const n = document.getElementById('notice'); \
                      return n.hidden ? null : [n.className, n.textContent];";
        let got = self.until("a notice", script, |v| !v.is_null()).await;
        got[1].as_str().unwrap().to_owned()
    }

    async fn clear_notice(&self) {
        self.js("document.getElementById('notice').hidden = true; return null;")
            .await;
    }

    /// Saves a screenshot as `<test>-<view>.png`; the page is usable at this size: nothing
    /// wider than the window (wide tables and diffs scroll inside their own boxes).
    async fn shot(&self, view: &str) {
        let png = self.client.screenshot().await.unwrap();
        let path = self.shots.join(format!("{}-{view}.png", self.name));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }

    /// Asserts the page does not scroll sideways at the current size.
    async fn fits(&self, view: &str) {
        let widths = self
            .js("return [document.documentElement.scrollWidth, window.innerWidth];")
            .await;
        assert!(
            widths[0].as_u64() <= widths[1].as_u64(),
            "{view} is wider than the window: {widths}"
        );
    }

    /// Looks at the view shown at both sizes: a screenshot of each, and it fits.
    async fn both_sizes(&self, view: &str) {
        self.shot(&format!("{view}-1280x800")).await;
        self.fits(view).await;
        self.size(NARROW).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.shot(&format!("{view}-390x844")).await;
        self.fits(view).await;
        self.size(WIDE).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    async fn close(mut self) {
        let _ = self.client.clone().close().await;
        self.end_driver();
    }

    fn end_driver(&mut self) {
        // Chromium runs in chromedriver's process group, which this test made.
        let group = nix::unistd::Pid::from_raw(self.driver.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.end_driver();
    }
}

fn session_state(world: &World, id: &str) -> String {
    let path = world.home.sessions_dir().join(format!("{id}.json"));
    let record: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    record["state"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_live_its_diff_shows_and_approve_from_the_page_commits() {
    let world = World::demo();
    let server = Server::start(&world);
    let Some(browser) = Browser::open("run").await else {
        return;
    };
    browser.goto(&server.at("#/")).await;
    browser
        .until(
            "the empty list",
            "return document.querySelector('#sessions tbody')?.textContent;",
            |v| v.as_str().is_some_and(|t| t.contains("no sessions")),
        )
        .await;

    // A run started on the command line, slow enough to be watched.
    let out = run(codehands(&world, 800).args([
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "fake",
        "--detach",
        "--json",
    ]));
    let id = json_lines(&out)[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let row = format!("#sessions tr[data-session='{id}']");
    browser
        .until(
            "the run in the list",
            &format!("return document.querySelector(\"{row} .state-cell\")?.textContent;"),
            |v| v.as_str().is_some_and(|s| s == "running" || s == "queued"),
        )
        .await;
    browser.both_sizes("list").await;
    browser.click(&format!("{row} a.session-link")).await;

    // Its events come while it runs, without a reload.
    let count = "return [...document.querySelectorAll('#events .event')].map(e => e.dataset.type);";
    let first = browser
        .until("the first events", count, |v| {
            v.as_array().is_some_and(|a| !a.is_empty())
        })
        .await;
    assert!(
        !first
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "approval.requested"),
        "the run had ended before the page showed it: {first}"
    );
    let state = browser
        .until(
            "the run's state",
            "return document.getElementById('state')?.textContent;",
            |v| v.is_string(),
        )
        .await;
    assert_eq!(state, "running", "the run is shown running while it runs");
    let all = browser
        .until("the run's end", count, |v| {
            v.as_array()
                .is_some_and(|a| a.iter().any(|t| t == "approval.requested"))
        })
        .await;
    let shown = all.as_array().unwrap().len();
    assert!(shown > first.as_array().unwrap().len());
    let seqs = browser
        .js("return [...document.querySelectorAll('#events .event')].map(e => +e.dataset.seq);")
        .await;
    let logged = json_lines(&run(codehands(&world, 0).args(["events", &id, "--json"])));
    let expected: Vec<u64> = logged.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        json!(expected),
        "every event of the log, once, in order"
    );
    browser
        .until(
            "the state after the run",
            "return document.getElementById('state')?.textContent;",
            |v| v == "awaiting_approval",
        )
        .await;
    browser.both_sizes("events").await;

    // The diff, with its file tree.
    browser.click("#tab-diff").await;
    let files = browser
        .until(
            "the diff's files",
            "return [...document.querySelectorAll('#diff section.file')].map(f => f.dataset.path);",
            |v| v.as_array().is_some_and(|a| !a.is_empty()),
        )
        .await;
    let stat = ok(&run(codehands(&world, 0).args(["diff", &id, "--json"])));
    let stat: Value = serde_json::from_str(stat.trim()).unwrap();
    let changed: Vec<&str> = stat["stat"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, json!(changed));
    let tree = browser
        .js("return [...document.querySelectorAll('#tree .tree-file')].map(f => f.dataset.path);")
        .await;
    assert_eq!(tree, json!(changed));
    let coloured = browser
        .js("return [document.querySelectorAll('#diff .dl.add').length, document.querySelectorAll('#diff .dl.del').length];")
        .await;
    assert!(
        coloured[0].as_u64().unwrap() > 0 && coloured[1].as_u64().unwrap() > 0,
        "{coloured}"
    );
    browser.both_sizes("diff").await;

    // The report, as `codehands report` prints it.
    browser.click("#tab-report").await;
    let report = browser
        .until(
            "the report",
            "return document.querySelector('#report pre')?.textContent;",
            |v| v.is_string(),
        )
        .await;
    let printed = ok(&run(codehands(&world, 0).args(["report", &id])));
    assert_eq!(report.as_str().unwrap().trim_end(), printed.trim_end());
    browser.both_sizes("report").await;

    // A comment on a line of the diff goes to the agent as a follow-up naming file and line.
    browser.click("#tab-diff").await;
    let added = format!("#diff section.file[data-path='{}'] .dl.add .no", changed[0]);
    browser.click(&added).await;
    browser
        .type_in("textarea.comment-text", "also pad the month")
        .await;
    browser.both_sizes("comment").await;
    let line = browser
        .js(&format!(
            "return document.querySelector(\"{added}\").parentElement.dataset.line;"
        ))
        .await;
    let asked = format!(
        "About {}, line {}: also pad the month",
        changed[0],
        line.as_str().unwrap()
    );
    browser.click("button.comment-send").await;
    let said = browser.notice().await;
    assert!(said.starts_with("follow-up sent to "), "{said}");
    browser
        .until("the follow-up's end", count, |v| {
            v.as_array()
                .is_some_and(|a| a.iter().filter(|t| *t == "approval.requested").count() == 2)
        })
        .await;
    // The text the agent was given is the session's next turn's prompt; that it names the
    // file and line is `comment_text`'s unit test (src/cli/ui/actions.rs).
    let _ = asked;
    browser.clear_notice().await;

    // Approve from the page: the commit is on the branch, with the page's message.
    browser.click("#tab-events").await;
    browser
        .type_in("#approve-message", "Fix the month, from the page")
        .await;
    browser.click("#approve").await;
    let said = browser.notice().await;
    assert!(said.starts_with("approved: "), "{said}");
    let branch = browser
        .js("return document.getElementById('branch').textContent;")
        .await;
    let branch = branch.as_str().unwrap();
    assert_eq!(
        world.git(&["log", "-1", "--format=%s", branch]).trim(),
        "Fix the month, from the page"
    );
    assert!(
        said.contains(world.git(&["rev-parse", branch]).trim()),
        "{said}"
    );
    assert_eq!(session_state(&world, &id), "approved");
    browser
        .until(
            "the approved state",
            "return document.getElementById('state')?.textContent;",
            |v| v == "approved",
        )
        .await;
    browser.both_sizes("approved").await;

    // A refusal is the command line's, word for word.
    browser.clear_notice().await;
    browser.click("#reject").await;
    let refused = browser.notice().await;
    let cli = run(codehands(&world, 0).args(["reject", &id]));
    assert!(!cli.status.success());
    assert_eq!(
        refused.trim(),
        text(&cli.stderr).trim(),
        "the page and the command line agree"
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_of_three_attempts_shows_side_by_side_and_approving_one_rejects_the_others() {
    let world = World::demo();
    let out = run(codehands(&world, 0).args([
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "fake",
        "--attempts",
        "3",
    ]));
    let task = ok(&out).lines().next().unwrap().trim().to_owned();
    let report = json_lines(&run(
        codehands(&world, 0).args(["task", &task, "--follow", "--json"])
    ));
    let report = report.last().unwrap().clone();
    let ids: Vec<String> = report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3);

    let server = Server::start(&world);
    let Some(browser) = Browser::open("task").await else {
        return;
    };
    browser.goto(&server.at("#/")).await;
    browser
        .until(
            "the task in the list",
            &format!(
                "return document.querySelector(\"#tasks tr[data-task='{task}'] a\")?.textContent;"
            ),
            |v| v.is_string(),
        )
        .await;
    browser
        .click(&format!("#tasks tr[data-task='{task}'] a"))
        .await;
    let states = "return [...document.querySelectorAll('#attempts td.attempt-state')].map(c => [c.dataset.session, c.textContent]);";
    let shown = browser
        .until("three attempts", states, |v| {
            v.as_array().is_some_and(|a| a.len() == 3)
        })
        .await;
    for (cell, id) in shown.as_array().unwrap().iter().zip(&ids) {
        assert_eq!(cell, &json!([id, "awaiting_approval"]));
    }
    // Files x attempts: each file the attempts changed is a row, a cell per attempt.
    let files: Vec<String> = report["attempts"][0]["filesChanged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    assert!(!files.is_empty());
    for file in &files {
        let cells = browser
            .js(&format!(
                "return [...document.querySelectorAll(\"#attempts td[data-file='{file}']\")].map(c => c.classList.contains('changed'));"
            ))
            .await;
        assert_eq!(cells, json!([true, true, true]), "{file}");
    }
    // Any two compared: the same replay made the same change.
    browser.click("#compare").await;
    browser
        .until(
            "the comparison",
            "return document.getElementById('compared').textContent;",
            |v| v.as_str().is_some_and(|t| t.contains("same")),
        )
        .await;
    browser.both_sizes("task").await;

    // Approve the second: the others are rejected.
    browser.type_in("#pick-message", "The second attempt").await;
    browser
        .click(&format!("button.pick[data-session='{}']", ids[1]))
        .await;
    let said = browser.notice().await;
    assert!(said.starts_with("approved: "), "{said}");
    assert!(
        said.contains(&format!("rejected attempt {}", &ids[0][..8])),
        "{said}"
    );
    let picked = browser
        .until("the pick", states, |v| {
            v.as_array()
                .is_some_and(|a| a.iter().filter(|c| c[1] == "rejected").count() == 2)
        })
        .await;
    assert_eq!(
        picked,
        json!([
            [ids[0], "rejected"],
            [ids[1], "approved"],
            [ids[2], "rejected"]
        ])
    );
    assert_eq!(session_state(&world, &ids[0]), "rejected");
    assert_eq!(session_state(&world, &ids[1]), "approved");
    assert_eq!(session_state(&world, &ids[2]), "rejected");
    assert_eq!(world.branches().len(), 2, "main and the picked branch");
    assert!(world.worktree_dirs().is_empty());
    browser
        .until(
            "the task picked",
            "return document.getElementById('task-state')?.textContent;",
            |v| v == "picked",
        )
        .await;
    browser.both_sizes("task-picked").await;
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_the_key_is_refused_and_events_resume_after_the_last_seq() {
    let world = World::demo();
    let out = run(codehands(&world, 0).args([
        "run",
        ".",
        "Fix the failing test.",
        "--agent",
        "fake",
        "--then",
        "keep",
        "--json",
    ]));
    let events = json_lines(&out);
    let id = events[0]["sessionId"].as_str().unwrap().to_owned();
    let last = events
        .iter()
        .filter_map(|e| e["seq"].as_u64())
        .max()
        .unwrap();
    let server = Server::start(&world);
    let host = server.addr.clone();
    let key = format!("/?token={}", server.token);

    let (status, _, body) = http(&server.addr, &host, "/", &[]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("needs its key"), "{body}");
    let (status, _, _) = http(&server.addr, &host, "/api/sessions?token=0000", &[]);
    assert_eq!(status, 403);
    let wrong = "f".repeat(64);
    let (status, _, _) = http(
        &server.addr,
        &host,
        &format!("/api/sessions?token={wrong}"),
        &[],
    );
    assert_eq!(status, 403);
    // A page of another site pointed at 127.0.0.1 names its own host.
    let (status, _, _) = http(&server.addr, "attacker.example:80", &key, &[]);
    assert_eq!(status, 403);
    // With the key: the page, and no header that lets another site read it.
    let (status, head, body) = http(
        &server.addr,
        &host,
        &key,
        &[("Origin", "http://attacker.example")],
    );
    assert_eq!(status, 200);
    assert!(body.contains("page.js"), "{body}");
    assert!(!head.contains("access-control-allow"), "{head}");
    assert!(head.contains("content-security-policy"), "{head}");

    // The events after seq 3, asked for by a reconnecting browser, and by the query.
    let path = format!("/api/sessions/{id}/events?token={}", server.token);
    let (status, _, body) = http(&server.addr, &host, &path, &[("Last-Event-ID", "3")]);
    assert_eq!(status, 200);
    let ids: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(ids, (4..=last).collect::<Vec<_>>(), "{body}");
    assert!(body.contains("event: end"), "{body}");
    let (_, _, body) = http(&server.addr, &host, &format!("{path}&after={last}"), &[]);
    assert!(!body.contains("id: "), "nothing after the last: {body}");

    // The browser without the key sees the refusal, not the page.
    let Some(browser) = Browser::open("refused").await else {
        return;
    };
    browser
        .goto(&format!("http://{}/#/s/{id}", server.addr))
        .await;
    let shown = browser.js("return document.body.textContent;").await;
    assert!(shown.as_str().unwrap().contains("refused"), "{shown}");
    browser.shot("no-key-1280x800").await;
    browser.close().await;
}
