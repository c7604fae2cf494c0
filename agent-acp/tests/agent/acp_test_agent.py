#!/usr/bin/env python3
"""A small agent of our tests' own that speaks the Agent Client Protocol on stdio.

It calls no model: what a turn does is chosen by a word in the prompt.

- "tour": every kind of session/update there is (and one that does not exist yet), a tool
  call of every kind, and a change: it writes `acp.txt`. "slowly" in the prompt pauses a fifth
  of a second after each update, so a client can leave while the turn surely goes on.
- "ask": asks permission to run `touch allowed.txt`; allowed, it makes the file.
- "malformed": prints a line that is not JSON-RPC in the middle of its turn, then goes on.
- "wait": starts a long command and waits until the client cancels the turn ("stubborn"
  in the prompt: it takes no notice of the cancel and goes on waiting, until it is killed).
- "give up": ends the turn `cancelled` though nobody cancelled it.
- "fs": asks the client to read a file (fs/read_text_file), which codehands does not serve.
- anything else: writes `acp.txt` and says so.

Sessions are kept under $HOME/.acp-test-agent/ so that session/load can replay them.
With the argument `--no-load` it offers neither session/load nor session/resume.
"""

import json
import os
import sys
import time
import uuid

CWD = os.getcwd()
STATE = os.path.join(os.environ.get("HOME", "/tmp"), ".acp-test-agent")
# Seconds to pause after each update of the turn under way ("slowly").
PAUSE = 0.0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def update(session, which, **fields):
    fields["sessionUpdate"] = which
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session, "update": fields}})
    if PAUSE:
        time.sleep(PAUSE)


def text(words):
    return {"type": "text", "text": words}


def read_message():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


class Session:
    def __init__(self, session_id):
        self.id = session_id
        self.path = os.path.join(STATE, session_id + ".json")
        self.history = []
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.history = json.load(f)

    def say(self, words, message_id=None):
        update(self.id, "agent_message_chunk", content=text(words),
               messageId=message_id or str(uuid.uuid4()))
        self.history.append(words)

    def save(self):
        os.makedirs(STATE, exist_ok=True)
        with open(self.path, "w") as f:
            json.dump(self.history, f)

    def replay(self):
        for words in self.history:
            update(self.id, "agent_message_chunk", content=text(words))


def write_file(name, content):
    with open(os.path.join(CWD, name), "w") as f:
        f.write(content)


def tour(s, prompt_text):
    s_id = s.id
    update(s_id, "user_message_chunk", content=text(prompt_text))
    update(s_id, "agent_thought_chunk", content=text("Thinking about it."))
    s.say("Let me look ", "m1")
    update(s_id, "agent_message_chunk", content=text("around."), messageId="m1")
    update(s_id, "plan", entries=[
        {"content": "Read the README", "status": "completed", "priority": "high"},
        {"content": "Write acp.txt", "status": "in_progress", "priority": "medium"},
    ])
    readme = os.path.join(CWD, "README.md")
    update(s_id, "tool_call", toolCallId="read-1", title="Reading README.md", kind="read",
           status="in_progress", locations=[{"path": readme}])
    update(s_id, "tool_call_update", toolCallId="read-1", status="completed",
           content=[{"type": "content", "content": text("# demo")}])
    update(s_id, "tool_call", toolCallId="search-1", title="Searching for TODO", kind="search",
           status="completed", rawInput={"pattern": "TODO"})
    update(s_id, "tool_call", toolCallId="edit-1", title="Writing acp.txt", kind="edit",
           status="pending", rawInput={"path": "acp.txt"})
    write_file("acp.txt", "written by the ACP test agent\n")
    update(s_id, "tool_call_update", toolCallId="edit-1", status="completed",
           content=[{"type": "diff", "path": os.path.join(CWD, "acp.txt"),
                     "newText": "written by the ACP test agent\n"}],
           locations=[{"path": os.path.join(CWD, "acp.txt")}])
    update(s_id, "tool_call", toolCallId="exec-1", title="npm test", kind="execute",
           status="in_progress", rawInput={"command": "npm test"})
    update(s_id, "tool_call_update", toolCallId="exec-1", status="completed",
           rawOutput={"stdout": "Tests: 2 passed, 2 total\n", "exit_code": 0})
    update(s_id, "tool_call", toolCallId="delete-1", title="Deleting old.log", kind="delete",
           status="completed", locations=[{"path": os.path.join(CWD, "old.log")}])
    update(s_id, "tool_call", toolCallId="move-1", title="Moving a.txt to b.txt", kind="move",
           status="completed", locations=[{"path": os.path.join(CWD, "a.txt")},
                                          {"path": os.path.join(CWD, "b.txt")}])
    update(s_id, "tool_call", toolCallId="fetch-1", title="Fetching the docs", kind="fetch",
           status="failed", rawOutput={"error": "no network here"})
    update(s_id, "tool_call", toolCallId="think-1", title="Thinking", kind="think",
           status="completed")
    update(s_id, "usage_update", used=1200, size=200000,
           cost={"amount": 0.0125, "currency": "USD"})
    update(s_id, "available_commands_update", availableCommands=[{"name": "help", "description": "Help"}])
    update(s_id, "current_mode_update", currentModeId="ask")
    update(s_id, "config_option_update", configOptions=[])
    update(s_id, "session_info_update", title="A tour")
    update(s_id, "a_kind_from_a_later_version", anything=True)
    s.say("I wrote acp.txt.")


def ask(s):
    update(s.id, "tool_call", toolCallId="exec-ask", title="touch allowed.txt", kind="execute",
           status="pending", rawInput={"command": "touch allowed.txt"})
    send({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": s.id,
        "toolCall": {"toolCallId": "exec-ask"},
        "options": [
            {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "always", "name": "Always", "kind": "allow_always"},
            {"optionId": "no", "name": "Deny", "kind": "reject_once"},
        ],
    }})
    while True:
        message = read_message()
        if message.get("id") == 0 and "result" in message:
            break
        if message.get("method") == "session/cancel":
            return "cancelled"
    outcome = message["result"]["outcome"]
    if outcome.get("outcome") == "selected" and outcome.get("optionId") == "yes":
        write_file("allowed.txt", "")
        update(s.id, "tool_call_update", toolCallId="exec-ask", status="completed",
               rawOutput={"stdout": "", "exit_code": 0})
        s.say("Allowed: I made allowed.txt.")
    else:
        update(s.id, "tool_call_update", toolCallId="exec-ask", status="failed",
               content=[{"type": "content", "content": text("The user refused this command.")}])
        s.say("Denied: I made nothing.")
    return "end_turn"


def wait(s, stubborn):
    s.say("Waiting for a long command.")
    update(s.id, "tool_call", toolCallId="exec-wait", title="sleep 600", kind="execute",
           status="in_progress", rawInput={"command": "sleep 600"})
    while True:
        message = read_message()
        if message.get("method") == "session/cancel" and not stubborn:
            update(s.id, "tool_call_update", toolCallId="exec-wait", status="failed",
                   content=[{"type": "content", "content": text("cancelled")}])
            return "cancelled"


def fs(s):
    send({"jsonrpc": "2.0", "id": 5, "method": "fs/read_text_file",
          "params": {"sessionId": s.id, "path": os.path.join(CWD, "README.md")}})
    while True:
        message = read_message()
        if message.get("id") == 5:
            break
    s.say("The client would not read it: " + message.get("error", {}).get("message", "?"))
    return "end_turn"


def prompt(s, params):
    global PAUSE
    words = " ".join(b.get("text", "") for b in params.get("prompt", []))
    PAUSE = 0.2 if "slowly" in words else 0.0
    stop = "end_turn"
    if "tour" in words:
        tour(s, words)
    elif "ask" in words:
        stop = ask(s)
    elif "malformed" in words:
        s.say("About to misbehave.")
        sys.stdout.write("this line is not JSON-RPC\n")
        sys.stdout.flush()
        s.say("Still here.")
    elif "wait" in words:
        stop = wait(s, "stubborn" in words)
    elif "give up" in words:
        s.say("I give up.")
        stop = "cancelled"
    elif "fs" in words.split():
        stop = fs(s)
    else:
        write_file("acp.txt", "written by the ACP test agent\n")
        s.say("Wrote acp.txt.")
    s.save()
    return {"stopReason": stop,
            "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}}


def main():
    sessions = {}
    while True:
        message = read_message()
        method, params, request_id = message.get("method"), message.get("params") or {}, message.get("id")
        if method == "initialize":
            answer(request_id, {"protocolVersion": 1,
                                "agentCapabilities": {"loadSession": "--no-load" not in sys.argv},
                                "authMethods": [],
                                "agentInfo": {"name": "acp-test-agent", "version": "1.0.0"}})
        elif method == "session/new":
            s = Session("acp-test-" + str(uuid.uuid4()))
            sessions[s.id] = s
            answer(request_id, {"sessionId": s.id,
                                "configOptions": [{"id": "model", "name": "Model", "category": "model",
                                                   "type": "select", "currentValue": "no-model",
                                                   "options": []}]})
        elif method == "session/load":
            s = Session(params["sessionId"])
            sessions[s.id] = s
            s.replay()
            answer(request_id, {})
        elif method == "session/prompt":
            answer(request_id, prompt(sessions[params["sessionId"]], params))
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "unknown method " + str(method)}})


if __name__ == "__main__":
    main()
