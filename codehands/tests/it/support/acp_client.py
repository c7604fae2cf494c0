"""An ACP client made with the Agent Client Protocol's official Python SDK (PyPI
`agent-client-protocol`, module `acp`, pinned in the venv `cargo xtask install` makes),
driving `codehands acp` as an editor would, and checking every message codehands sends
against the SDK's models.

    python acp_client.py STEPS_JSON -- CODEHANDS_PROGRAM ARGS...

STEPS_JSON lists what to do, in order; each step is an object:

- {"new": CWD}: initialize (once) and open a session in CWD.
- {"load": SESSION_ID, "cwd": CWD}: initialize (once) and load that session.
- {"prompt": TEXT, "approval": "approve"|"keep"|"reject", "permission": "allow"|"deny",
   "cancel_after": UPDATE_KIND|"prompt"|"asked", "leave_after": UPDATE_KIND}: one prompt; the
   client answers the inner agent's permission requests with "permission" and the end-of-turn
   question with "approval"; with "cancel_after", it sends session/cancel once an update of
   that kind came ("prompt": right after the prompt was written, "asked": while a permission
   request is open, which it then answers `cancelled`, as ACP says); with "leave_after", it
   closes the agent's stdin then (an editor that quits mid-turn).

It prints one JSON object per line: {"initialized": …}, {"session": id}, {"update": …},
{"asked": …, "chose": …}, {"stopReason": …, "cancelToAnswerMs": …}, {"error": …} or
{"left": true} per prompt, {"loaded": true}, {"invalid": why, "message": …} for each message
of codehands' that breaks the protocol, and {"exit": code} at the end.
"""

import asyncio
import json
import os
import sys
import time

import acp
from acp import schema
from acp.connection import StreamDirection
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

# The model of the answer to each request of ours, by method.
RESPONSES = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/prompt": schema.PromptResponse,
}


def say(thing):
    print(json.dumps(thing), flush=True)


def unknown_keys(sent, dumped, path="$"):
    """Keys of `sent` the model did not keep (it ignores unknown fields, and salvages a
    broken one as null): each is a field the model does not know, or a value it refused."""
    found = []
    if isinstance(sent, dict) and isinstance(dumped, dict):
        for key, value in sent.items():
            if key not in dumped:
                found.append(f"{path}.{key}")
            elif value is not None and dumped[key] is None:
                found.append(f"{path}.{key} (refused: {value!r})")
            else:
                found.extend(unknown_keys(value, dumped[key], f"{path}.{key}"))
    elif isinstance(sent, list) and isinstance(dumped, list):
        for i, (a, b) in enumerate(zip(sent, dumped)):
            found.extend(unknown_keys(a, b, f"{path}[{i}]"))
    return found


class Checker:
    """Checks each message codehands sends (the connection's incoming ones)."""

    def __init__(self):
        self.asked = {}  # our request id -> method
        self.prompted = {}  # our session/prompt's id -> its session
        # Sessions whose prompt was answered: no update of theirs may come until the next
        # prompt or load (ACP: a turn's updates come before its prompt's answer).
        self.answered = set()

    def check(self, model, value, message):
        try:
            parsed = model.model_validate(value)
        except Exception as e:  # pydantic's ValidationError
            say({"invalid": f"{model.__name__}: {e}", "message": message})
            return
        dumped = parsed.model_dump(mode="json", by_alias=True)
        for key in unknown_keys(value, dumped):
            say({"invalid": f"{model.__name__} does not take {key}", "message": message})

    def __call__(self, event):
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self.asked[message["id"]] = message["method"]
            if message.get("method") in ("session/prompt", "session/load"):
                self.answered.discard(message["params"]["sessionId"])
            if message.get("method") == "session/prompt":
                self.prompted[message["id"]] = message["params"]["sessionId"]
            return
        if message.get("jsonrpc") != "2.0":
            say({"invalid": "jsonrpc is not \"2.0\"", "message": message})
        method = message.get("method")
        if method == "session/update":
            self.check(schema.SessionNotification, message.get("params"), message)
            if (message.get("params") or {}).get("sessionId") in self.answered:
                say({"invalid": "an update after the prompt's answer", "message": message})
        elif method == "session/request_permission":
            self.check(schema.RequestPermissionRequest, message.get("params"), message)
        elif method is not None:
            say({"invalid": f"a request the client did not offer to serve: {method}",
                 "message": message})
        elif "error" in message:
            self.check(schema.Error, message["error"], message)
            if message.get("id") in self.prompted:
                self.answered.add(self.prompted.pop(message["id"]))
        else:
            asked = self.asked.get(message.get("id"))
            model = RESPONSES.get(asked)
            if model is None:
                say({"invalid": "an answer to no request of ours", "message": message})
            else:
                self.check(model, message.get("result"), message)
            if message.get("id") in self.prompted:
                self.answered.add(self.prompted.pop(message["id"]))


class Client:
    def __init__(self):
        self.permission = "allow"
        self.approval = "keep"
        self.cancel_after = None
        self.cancel = None
        self.cancelled = None
        self.leave_after = None
        self.leave = None

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        ids = [o.option_id for o in options]
        wanted = self.approval if "approve" in ids else self.permission
        asked = {"toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                 "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options]}
        if self.cancel_after == "asked" and self.cancel:
            self.cancel_after = None
            say({"asked": asked, "chose": "cancelled"})
            await self.cancel()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        say({"asked": asked, "chose": wanted})
        if wanted in ids:
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=wanted))
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def session_update(self, session_id, update, **kwargs):
        shown = update.model_dump(by_alias=True, exclude_none=True)
        say({"update": shown})
        if self.cancel_after and shown.get("sessionUpdate") == self.cancel_after and self.cancel:
            self.cancel_after = None
            asyncio.get_running_loop().create_task(self.cancel())
        if self.leave_after and shown.get("sessionUpdate") == self.leave_after and self.leave:
            self.leave_after = None
            self.leave()

    async def write_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/read_text_file")


async def main():
    at = sys.argv.index("--")
    steps = json.loads(sys.argv[1])
    program, args = sys.argv[at + 1], sys.argv[at + 2:]
    client = Client()
    checker = Checker()
    # The library gives the agent a few variables only, unless told: all of ours.
    async with acp.spawn_agent_process(client, program, *args, env=dict(os.environ),
                                       observers=[checker]) as (conn, process):
        initialized = False
        session = None
        for step in steps:
            if not initialized and ("new" in step or "load" in step):
                reply = await conn.initialize(protocol_version=1)
                say({"initialized": reply.model_dump(by_alias=True, exclude_none=True)})
                initialized = True
            if "new" in step:
                reply = await conn.new_session(cwd=step["new"], mcp_servers=[])
                session = reply.session_id
                say({"session": session})
            elif "load" in step:
                session = step["load"]
                await conn.load_session(cwd=step["cwd"], session_id=session, mcp_servers=[])
                say({"loaded": True})
            elif "prompt" in step:
                client.permission = step.get("permission", "allow")
                client.approval = step.get("approval", "keep")
                client.cancel_after = step.get("cancel_after")
                client.cancelled = None

                async def cancel(s=session):
                    client.cancelled = time.monotonic()
                    await conn.cancel(session_id=s)

                client.cancel = cancel
                client.leave_after = step.get("leave_after")
                client.leave = process.stdin.close
                try:
                    asked = asyncio.ensure_future(
                        conn.prompt(session_id=session, prompt=[acp.text_block(step["prompt"])]))
                    if client.cancel_after == "prompt":
                        client.cancel_after = None
                        # The prompt is written as the task first runs: cancel right after.
                        await asyncio.sleep(0)
                        await cancel()
                    reply = await asked
                    said = {"stopReason": reply.stop_reason}
                    if client.cancelled is not None:
                        said["cancelToAnswerMs"] = round((time.monotonic() - client.cancelled) * 1000)
                    say(said)
                except acp.RequestError as e:
                    say({"error": str(e), "code": getattr(e, "code", None),
                         "data": getattr(e, "data", None)})
                except ConnectionError:
                    say({"left": True})
                    break
        if not process.stdin.is_closing():
            process.stdin.close()
        await process.wait()
        say({"exit": process.returncode})


try:
    asyncio.run(main())
except ConnectionError:
    # The library closing a connection whose agent is gone (after "leave_after").
    pass
