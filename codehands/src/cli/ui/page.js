// The review page of `codehands ui`: the sessions and tasks, a run's events live, its diff
// and report, a task's attempts side by side, and the actions of the command line. What an
// agent wrote is data: it reaches the page as text nodes only, never as markup.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const STATES = ["queued", "running", "awaiting_approval", "approving", "approved", "rejecting",
  "rejected", "stopped", "failed"];
let leave = () => {}; // stops the timers and streams of the view shown

// ---- small helpers ----------------------------------------------------------------------

/** An element with attributes and children (strings become text). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, body) {
  const init = { headers: { "x-codehands-token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let value;
  try { value = JSON.parse(text); } catch { value = { error: text }; }
  if (!response.ok) throw new Error(value.error || `${response.status}`);
  return value;
}

function notice(text, ok) {
  const n = document.getElementById("notice");
  n.hidden = false;
  n.className = ok ? "ok" : "error";
  n.textContent = text;
}

function live(on, text) {
  const l = document.getElementById("live");
  l.className = on ? "on" : "off";
  l.textContent = text;
}

/** Runs an action of the command line; its line (or its refusal) goes to the notice. */
async function act(path, body, after) {
  try {
    const done = await api(path, body || {});
    notice(done.line, true);
    if (after) after(done);
  } catch (e) {
    notice(`codehands: ${e.message}`, false);
  }
}

const short = (id) => (id || "").slice(0, 8);
const usd = (c) => c === null || c === undefined ? "–"
  : c === 0 || c >= 0.01 ? `$${c.toFixed(2)}` : `$${c.toPrecision(2)}`;
const stateBadge = (s) => el("span", { class: `state ${s}` }, s);
const repoName = (p) => (p || "").split("/").filter(Boolean).pop() || p;

function age(rfc3339) {
  const secs = Math.max(0, (Date.now() - Date.parse(rfc3339)) / 1000);
  if (secs < 60) return `${Math.floor(secs)}s`;
  if (secs < 3600) return `${Math.floor(secs / 60)}m`;
  if (secs < 86400) return `${Math.floor(secs / 3600)}h`;
  return `${Math.floor(secs / 86400)}d`;
}

const seconds = (ms) => ms === null || ms === undefined ? "–" : `${(ms / 1000).toFixed(1)}s`;

function show(...nodes) {
  const view = document.getElementById("view");
  view.replaceChildren(...nodes);
}

function where(...parts) {
  document.getElementById("where").replaceChildren(...parts.flatMap((p, i) => i ? [" / ", p] : [p]));
}

/** Calls `f` now and every `ms` until the view changes. */
function every(ms, f) {
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try { await f(); live(true, "live"); } catch (e) { live(false, `not up to date: ${e.message}`); }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  let timer = setTimeout(tick, 0);
  return () => { stopped = true; clearTimeout(timer); };
}

// ---- the list -----------------------------------------------------------------------------

function listView() {
  where("sessions and tasks");
  const state = el("select", { id: "filter-state", "aria-label": "state" },
    el("option", { value: "" }, "every state"), STATES.map((s) => el("option", { value: s }, s)));
  const repo = el("input", { type: "text", id: "filter-repo", placeholder: "repo path contains…", "aria-label": "repo" });
  const tasks = el("tbody");
  const sessions = el("tbody");
  const problems = el("div", { class: "muted" });
  let last = null;
  const render = () => {
    if (!last) return;
    const want = state.value, path = repo.value.trim();
    const rows = last.sessions.filter((r) => (!want || r.state === want) && (!path || r.repoPath.includes(path)));
    sessions.replaceChildren(...rows.reverse().map((r) => el("tr", { "data-session": r.sessionId },
      el("td", {}, el("a", { class: "mono session-link", href: `#/s/${r.sessionId}` }, short(r.sessionId))),
      el("td", { title: r.repoPath }, repoName(r.repoPath)),
      el("td", {}, r.agent),
      el("td", { class: "hide-narrow" }, r.model || "default"),
      el("td", { class: "state-cell" }, stateBadge(r.state)),
      el("td", {}, usd(r.costUsd)),
      el("td", { class: r.tests ? r.tests.outcome : "", title: r.tests ? r.tests.line : "" }, r.tests ? r.tests.outcome : "?"),
      el("td", {}, age(r.createdAt)),
      el("td", {}, r.taskId ? el("a", { class: "mono", href: `#/t/${r.taskId}` }, short(r.taskId)) : ""))));
    if (!rows.length) sessions.append(el("tr", {}, el("td", { colspan: 9, class: "muted" }, "no sessions")));
    const cost = (t) => {
      const costs = t.attempts.map((a) => last.sessions.find((r) => r.sessionId === a.sessionId))
        .filter((r) => r && r.costUsd !== null && r.costUsd !== undefined).map((r) => r.costUsd);
      return costs.length ? usd(costs.reduce((a, b) => a + b, 0)) : "–";
    };
    const shown = last.tasks.filter((t) => !path || t.repoPath.includes(path));
    tasks.replaceChildren(...shown.reverse().map((t) => el("tr", { "data-task": t.taskId },
      el("td", {}, el("a", { class: "mono task-link", href: `#/t/${t.taskId}` }, short(t.taskId))),
      el("td", {}, stateBadge(t.state)),
      el("td", {}, `${t.attempts.length} attempts`),
      el("td", {}, cost(t)),
      el("td", {}, age(t.createdAt)),
      el("td", { class: "wrap" }, t.prompt.split("\n")[0]))));
    if (!shown.length) tasks.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "no tasks")));
    problems.replaceChildren(...last.unreadable.map((u) => el("div", {}, `unreadable: ${u.path}: ${u.error}`)));
  };
  state.addEventListener("change", render);
  repo.addEventListener("input", render);
  show(el("h1", {}, "Sessions"), el("div", { class: "filters" }, state, repo),
    el("div", { class: "scroll" }, el("table", { id: "sessions" },
      el("thead", {}, el("tr", {}, ["ID", "REPO", "AGENT"].map((h) => el("th", {}, h)),
        el("th", { class: "hide-narrow" }, "MODEL"), ["STATE", "COST", "TESTS", "AGE", "TASK"].map((h) => el("th", {}, h)))),
      sessions)),
    el("h2", {}, "Tasks"),
    el("div", { class: "scroll" }, el("table", { id: "tasks" },
      el("thead", {}, el("tr", {}, ["TASK", "STATE", "ATTEMPTS", "COST", "AGE", "PROMPT"].map((h) => el("th", {}, h)))),
      tasks)),
    problems);
  return every(1500, async () => {
    const now = await api("/api/sessions");
    if (JSON.stringify(now) !== JSON.stringify(last)) { last = now; render(); }
  });
}

// ---- a session ----------------------------------------------------------------------------

function sessionView(id, tab) {
  const head = el("div", {});
  const events = el("div", { class: "events", id: "events" });
  const diff = el("div", { id: "diff" });
  const report = el("div", { id: "report" });
  const panes = { events, diff, report };
  const tabs = el("div", { class: "tabs", role: "tablist" });
  let record = null, lastSeq = 0, source = null, stopped = false;
  const asked = new Map(); // permission requests waiting, by request id: their row's buttons

  const select = (name) => {
    tab = name;
    for (const [n, pane] of Object.entries(panes)) pane.hidden = n !== name;
    for (const b of tabs.children) b.classList.toggle("active", b.dataset.tab === name);
    if (name === "diff") loadDiff();
    if (name === "report") loadReport();
  };
  for (const name of ["events", "diff", "report"]) {
    tabs.append(el("button", { id: `tab-${name}`, "data-tab": name, role: "tab", onclick: () => select(name) }, name));
  }

  const refresh = async () => {
    const now = await api(`/api/sessions/${id}`);
    record = now.record;
    const r = record;
    where(el("a", { href: "#/" }, "sessions"), `session ${short(r.sessionId)}`);
    head.replaceChildren(
      el("h1", {}, "Session ", el("span", { class: "mono" }, short(r.sessionId)), " ",
        el("span", { id: "state", class: `state ${r.state}` }, r.state)),
      el("dl", { class: "meta" },
        el("dt", {}, "agent"), el("dd", {}, `${r.agent} · ${r.model || "default model"}`),
        el("dt", {}, "repo"), el("dd", { class: "mono" }, r.repoPath),
        el("dt", {}, "branch"), el("dd", { class: "mono", id: "branch" }, r.branch),
        el("dt", {}, "cost"), el("dd", {}, usd(r.costUsd)),
        now.taskId ? [el("dt", {}, "task"), el("dd", {}, el("a", { href: `#/t/${now.taskId}` },
          `attempt ${now.attempt} of task ${short(now.taskId)}`))] : [],
        r.failure ? [el("dt", {}, "failure"), el("dd", { class: "failed" }, r.failure)] : [],
        el("dt", {}, "prompt"), el("dd", {}, r.prompt)));
  };

  const message = el("input", { type: "text", id: "approve-message", placeholder: "commit message (default: the prompt's first line)" });
  const followUp = el("textarea", { id: "follow-up", placeholder: "a follow-up for the agent (or a message to steer a running turn)" });
  const afterAction = () => { refresh().catch(() => {}); stream(); if (tab !== "events") select(tab); };
  const actions = el("div", { class: "actions" },
    el("div", { class: "box" }, message,
      el("button", { id: "approve", class: "primary", onclick: () => act(`/api/sessions/${id}/approve`, { message: message.value }, afterAction) }, "Approve"),
      el("button", { id: "reject", class: "danger", onclick: () => act(`/api/sessions/${id}/reject`, {}, afterAction) }, "Reject"),
      el("button", { id: "stop", onclick: () => act(`/api/sessions/${id}/stop`, {}, afterAction) }, "Stop")),
    el("div", { class: "box" }, followUp,
      el("button", { id: "send", onclick: () => act(`/api/sessions/${id}/send`, { text: followUp.value }, () => { followUp.value = ""; afterAction(); }) }, "Send")));

  // The events: replayed from the log after the last seq shown, then live (SSE).
  const eventRow = (d) => {
    const e = d.event;
    const tone = { "task.failed": "bad", "approval.requested": "good", "task.finished": "good",
      "task.stopped": "warn", "box.hidden": "warn", "provider.status": "warn" }[e.type]
      || (e.type === "test.result" ? (e.payload && e.payload.passed ? "good" : "bad") : "");
    const row = el("div", { class: `event ${tone}`, "data-seq": e.seq, "data-type": e.type },
      el("span", { class: "seq" }, e.seq), el("span", { class: "kind", title: e.type }, d.kind),
      el("span", { class: "text" }, d.text));
    if (e.type === "permission.requested") {
      const request = e.payload.requestId;
      const why = el("input", { type: "text", placeholder: "why not (with deny)" });
      const answer = (decision) => act(`/api/sessions/${id}/answer`, { requestId: request, decision, message: why.value || null });
      const ask = el("div", { class: "ask" },
        el("button", { class: "allow", onclick: () => answer("allow") }, "Allow"),
        el("button", { class: "deny danger", onclick: () => answer("deny") }, "Deny"), why);
      asked.set(request, ask);
      row.append(ask);
    }
    if (e.type === "permission.resolved" && asked.has(e.payload.requestId)) {
      asked.get(e.payload.requestId).remove();
    }
    return row;
  };
  const stream = () => {
    if (stopped) return;
    if (source) source.close();
    source = new EventSource(`/api/sessions/${id}/events?token=${TOKEN}&after=${lastSeq}`);
    source.onopen = () => live(true, "live");
    source.onerror = () => live(false, "reconnecting…");
    source.addEventListener("event", (m) => {
      const d = JSON.parse(m.data);
      if (d.event.seq <= lastSeq) return;
      lastSeq = d.event.seq;
      const atEnd = events.scrollTop + events.clientHeight >= events.scrollHeight - 4;
      events.append(eventRow(d));
      if (atEnd) events.scrollTop = events.scrollHeight;
    });
    source.addEventListener("end", (m) => {
      source.close();
      const d = JSON.parse(m.data);
      live(true, d.state ? `run ended: ${d.state}` : "run ended");
      if (d.error) notice(`codehands: ${d.error}`, false);
      refresh().catch(() => {});
      if (tab !== "events") select(tab);
    });
  };

  const loadDiff = async () => {
    try {
      const d = await api(`/api/sessions/${id}/diff`);
      diff.replaceChildren(diffView(d.patch, d.stat.files, id));
    } catch (e) {
      diff.replaceChildren(el("p", { class: "muted" }, e.message));
    }
  };
  const loadReport = async () => {
    try {
      const r = await api(`/api/sessions/${id}/report`);
      report.replaceChildren(el("pre", { class: "report" }, r.text));
    } catch (e) {
      report.replaceChildren(el("p", { class: "muted" }, e.message));
    }
  };

  show(head, actions, tabs, events, diff, report);
  select(tab || "events");
  stream();
  const stopTimer = every(2000, refresh);
  return () => { stopped = true; stopTimer(); if (source) source.close(); };
}

// ---- diffs --------------------------------------------------------------------------------

const KEYWORDS = new Set(("fn let mut def return if else elif for while in import from class pub use " +
  "struct enum impl match const var function async await true false None True False null self new try " +
  "except raise with as not and or is package func type static void int char bool string").split(" "));

/** One line of code as spans: keywords, strings, comments and numbers coloured. */
function highlight(text, path) {
  const hash = /\.(py|sh|rb|toml|ya?ml|pl|r|cfg|conf)$/i.test(path) || /(^|\/)(Makefile|Dockerfile)$/.test(path);
  const pattern = hash
    ? /(#.*$)|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|\b(\d+(?:\.\d+)?)\b|([A-Za-z_]\w*)/g
    : /(\/\/.*$)|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`)|\b(\d+(?:\.\d+)?)\b|([A-Za-z_]\w*)/g;
  const out = [];
  let at = 0, m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > at) out.push(text.slice(at, m.index));
    const [all, comment, string, number, word] = m;
    if (comment) out.push(el("span", { class: "tk-c" }, comment));
    else if (string) out.push(el("span", { class: "tk-s" }, string));
    else if (number) out.push(el("span", { class: "tk-n" }, number));
    else if (word && KEYWORDS.has(word)) out.push(el("span", { class: "tk-k" }, word));
    else out.push(all);
    at = m.index + all.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** A patch cut into files: each with its path and lines. */
function parsePatch(patch) {
  const files = [];
  let file = null;
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      const m = / b\/(.*)$/.exec(line);
      file = { path: m ? m[1] : line.slice(11), lines: [] };
      files.push(file);
    } else if (file && /^(\+\+\+ |--- |index |new file|deleted file|old mode|new mode|similarity|rename |Binary )/.test(line) && !file.lines.length) {
      if (line.startsWith("+++ b/")) file.path = line.slice(6);
      if (line.startsWith("Binary ")) file.lines.push({ kind: "hunk", text: line });
    } else if (file) {
      file.lines.push({ kind: line.startsWith("@@") ? "hunk" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx", text: line });
    }
  }
  return files;
}

/** The file tree of `paths`, folders first. */
function fileTree(stats, onPick) {
  const root = { dirs: new Map(), files: [] };
  for (const s of stats) {
    const parts = s.path.split("/");
    let node = root;
    for (const dir of parts.slice(0, -1)) {
      if (!node.dirs.has(dir)) node.dirs.set(dir, { dirs: new Map(), files: [] });
      node = node.dirs.get(dir);
    }
    node.files.push({ name: parts[parts.length - 1], stat: s });
  }
  const list = (node) => el("ul", {},
    [...node.dirs.entries()].sort().map(([name, sub]) => el("li", {}, el("span", { class: "dir" }, `${name}/`), list(sub))),
    node.files.sort((a, b) => a.name.localeCompare(b.name)).map((f) => el("li", {},
      el("a", { href: "#", class: "tree-file", "data-path": f.stat.path, onclick: (e) => { e.preventDefault(); onPick(f.stat.path); } }, f.name),
      el("span", { class: "count" }, `+${f.stat.insertions ?? 0} −${f.stat.deletions ?? 0}`))));
  return el("nav", { class: "tree", id: "tree", "aria-label": "files" }, list(root));
}

/** A patch with its file tree; with `session`, a click on a line number opens a comment for
 * the agent, sent as a follow-up naming the file and line. */
function diffView(patch, stats, session) {
  const files = parsePatch(patch);
  if (!files.length) return el("p", { class: "muted", id: "no-change" }, "no change");
  const fileNodes = new Map();
  const body = el("div", { class: "diff" }, files.map((f) => {
    const lines = el("div", { class: "lines" });
    let oldNo = 0, newNo = 0;
    for (const line of f.lines) {
      if (line.kind === "hunk") {
        const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(line.text);
        if (m) { oldNo = +m[1]; newNo = +m[2]; }
        lines.append(el("div", { class: "dl hunk" }, el("span", { class: "no" }), el("span", { class: "no" }), el("span", { class: "code" }, line.text)));
        continue;
      }
      if (line.text === "" && line.kind === "ctx") continue;
      const o = line.kind === "add" ? "" : oldNo++;
      const n = line.kind === "del" ? "" : newNo++;
      const side = line.kind === "del" ? "old" : "new";
      const at = line.kind === "del" ? o : n;
      const row = el("div", { class: `dl ${line.kind}`, "data-line": at, "data-side": side },
        el("span", { class: "no" }, o), el("span", { class: "no" }, n),
        el("span", { class: "code" }, line.text.slice(0, 1), highlight(line.text.slice(1), f.path)));
      if (session) {
        for (const no of row.querySelectorAll(".no")) {
          no.title = "comment on this line: the agent gets it as a follow-up";
          no.addEventListener("click", () => openComment(row, session, f.path, at, side));
        }
      }
      lines.append(row);
    }
    const node = el("section", { class: "file", "data-path": f.path }, el("div", { class: "name" }, f.path), lines);
    fileNodes.set(f.path, node);
    return node;
  }));
  const tree = fileTree(stats && stats.length ? stats : files.map((f) => ({ path: f.path })),
    (path) => { const n = fileNodes.get(path); if (n) n.scrollIntoView({ block: "start" }); });
  return el("div", { class: "diffview" }, tree, body);
}

function openComment(row, session, path, line, side) {
  if (row.nextSibling && row.nextSibling.classList && row.nextSibling.classList.contains("comment")) return;
  const text = el("textarea", { class: "comment-text", placeholder: `what should change at ${path}:${line}?` });
  const box = el("div", { class: "comment" }, text, el("div", {},
    el("button", { class: "primary comment-send", onclick: () => act(`/api/sessions/${session}/comment`,
      { path, line, side, text: text.value }, () => { box.remove(); route(); }) }, "Send to the agent"), " ",
    el("button", { onclick: () => box.remove() }, "Cancel")));
  row.after(box);
  text.focus();
}

// ---- a task -------------------------------------------------------------------------------

function taskView(id) {
  const head = el("div", {});
  const grid = el("div", { class: "scroll" });
  const message = el("input", { type: "text", id: "pick-message", placeholder: "commit message (default: the prompt's first line)" });
  const pickA = el("select", { id: "compare-a", "aria-label": "attempt" });
  const pickB = el("select", { id: "compare-b", "aria-label": "against" });
  const compared = el("div", { id: "compared" });
  let last = null;
  const compare = async () => {
    try {
      const c = await api(`/api/compare?a=${pickA.value}&b=${pickB.value}`);
      compared.replaceChildren(
        el("ul", {}, c.files.map((f) => el("li", {}, el("span", { class: "mono" }, f.path), ` ${f.compared.replace("_", " ")}`))),
        diffView(c.patch, c.files.map((f) => ({ path: f.path })), null));
    } catch (e) {
      compared.replaceChildren(el("p", { class: "failed" }, `codehands: ${e.message}`));
    }
  };
  const render = (t) => {
    where(el("a", { href: "#/" }, "sessions"), `task ${short(t.taskId)}`);
    head.replaceChildren(
      el("h1", {}, "Task ", el("span", { class: "mono" }, short(t.taskId)), " ", el("span", { id: "task-state", class: `state ${t.state}` }, t.state)),
      el("dl", { class: "meta" },
        el("dt", {}, "repo"), el("dd", { class: "mono" }, t.repoPath),
        el("dt", {}, "base"), el("dd", { class: "mono" }, t.baseCommit.slice(0, 12)),
        el("dt", {}, "cost"), el("dd", {}, usd(t.costUsd)),
        el("dt", {}, "prompt"), el("dd", {}, t.prompt)));
    const A = t.attempts;
    const row = (label, cell) => el("tr", {}, el("th", {}, label), A.map((a) => cell(a)));
    const tests = (a) => a.tests.length ? a.tests[a.tests.length - 1] : null;
    const files = [...new Set(A.flatMap((a) => a.filesChanged))].sort();
    const statOf = (a, path) => a.diffStat && a.diffStat.files.find((f) => f.path === path);
    const table = el("table", { id: "attempts", class: "matrix" },
      el("thead", {}, el("tr", {}, el("th", {}, ""), A.map((a) => el("th", { "data-session": a.sessionId },
        `#${a.attempt} `, el("a", { class: "mono", href: `#/s/${a.sessionId}` }, short(a.sessionId)))))),
      el("tbody", {},
        row("agent", (a) => el("td", {}, `${a.agent} · ${a.model || "default"}`)),
        row("state", (a) => el("td", { class: "attempt-state", "data-session": a.sessionId }, stateBadge(a.state))),
        row("time", (a) => el("td", {}, seconds(a.durationMs))),
        row("cost", (a) => el("td", {}, usd(a.costUsd))),
        row("tokens", (a) => el("td", {}, a.tokens ? `${a.tokens.input} in, ${a.tokens.output} out` : "–")),
        row("diff", (a) => el("td", {}, a.diffStat ? `${a.diffStat.filesChanged} file${a.diffStat.filesChanged === 1 ? "" : "s"} +${a.diffStat.insertions} −${a.diffStat.deletions}` : "–")),
        row("tests", (a) => { const x = tests(a); return el("td", { class: x ? (x.passed ? "passed" : "failed") : "never" }, x ? `${x.passed ? "passed" : "failed"}: ${x.command}` : "never ran"); }),
        row("verdict", (a) => el("td", { class: a.passing ? "passed" : "failed" },
          a.passing ? "passes" : (a.failure || "does not pass"), a.cheapestPassing ? el("span", { class: "cheapest" }, " · cheapest") : "")),
        files.map((path) => row(el("span", { class: "mono" }, path), (a) => {
          const s = statOf(a, path);
          const changed = a.filesChanged.includes(path);
          return el("td", { class: `cell ${changed ? "changed" : ""}`, "data-file": path, "data-session": a.sessionId },
            changed ? (s ? `+${s.insertions ?? 0} −${s.deletions ?? 0}` : "changed") : "·");
        })),
        row("", (a) => el("td", {}, el("button", { class: "primary pick", "data-session": a.sessionId,
          onclick: () => act(`/api/sessions/${a.sessionId}/approve`, { message: message.value }, load) }, `Approve #${a.attempt}`)))));
    grid.replaceChildren(table);
    if (!pickA.options.length) {
      for (const [sel, n] of [[pickA, 0], [pickB, 1]]) {
        sel.replaceChildren(...A.map((a) => el("option", { value: a.sessionId }, `#${a.attempt} ${short(a.sessionId)}`)));
        sel.selectedIndex = Math.min(n, A.length - 1);
      }
    }
  };
  const load = async () => {
    const t = await api(`/api/tasks/${id}`);
    if (JSON.stringify(t) !== JSON.stringify(last)) { last = t; render(t); }
  };
  show(head, el("div", { class: "filters" }, message,
      el("button", { id: "reject-task", class: "danger", onclick: () => act(`/api/tasks/${id}/reject`, {}, load) }, "Reject every attempt")),
    grid,
    el("h2", {}, "Compare two attempts"),
    el("div", { class: "compare" }, pickA, "against", pickB, el("button", { id: "compare", onclick: compare }, "Compare")),
    compared);
  return every(1500, load);
}

// ---- routing ------------------------------------------------------------------------------

function route() {
  leave();
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "s" && parts[1]) leave = sessionView(parts[1], parts[2]);
  else if (parts[0] === "t" && parts[1]) leave = taskView(parts[1]);
  else leave = listView();
}

window.addEventListener("hashchange", () => { document.getElementById("notice").hidden = true; route(); });
route();
