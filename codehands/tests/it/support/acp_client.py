"""An ACP client made with the Agent Client Protocol's Python library (PyPI
`agent-client-protocol`, module `acp`), driving `codehands acp` as an editor would.

    python acp_client.py STEPS_JSON -- CODEHANDS_PROGRAM ARGS...

STEPS_JSON lists what to do, in order; each step is an object:

- {"new": CWD}: initialize (once) and open a session in CWD.
- {"load": SESSION_ID, "cwd": CWD}: initialize (once) and load that session.
- {"prompt": TEXT, "approval": "approve"|"keep"|"reject", "permission": "allow"|"deny",
   "cancel_after": UPDATE_KIND, "leave_after": UPDATE_KIND}: one prompt; the client answers
   the inner agent's permission requests with "permission" and the end-of-turn question with
   "approval"; with "cancel_after", it sends session/cancel once an update of that kind came;
   with "leave_after", it closes the agent's stdin then (an editor that quits mid-turn).

It prints one JSON object per line: {"initialized": …}, {"session": id}, {"update": …},
{"asked": …, "chose": …}, {"stopReason": …}, {"error": …} or {"left": true} per prompt,
{"loaded": true}, and {"exit": code} at the end.
"""

import asyncio
import json
import os
import sys

import acp
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse


def say(thing):
    print(json.dumps(thing), flush=True)


class Client:
    def __init__(self):
        self.permission = "allow"
        self.approval = "keep"
        self.cancel_after = None
        self.cancel = None
        self.leave_after = None
        self.leave = None

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        ids = [o.option_id for o in options]
        wanted = self.approval if "approve" in ids else self.permission
        say({"asked": {"toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                       "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options]},
             "chose": wanted})
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
    # The library gives the agent a few variables only, unless told: all of ours.
    async with acp.spawn_agent_process(client, program, *args, env=dict(os.environ)) as (conn, process):
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
                client.cancel = lambda s=session: conn.cancel(session_id=s)
                client.leave_after = step.get("leave_after")
                client.leave = process.stdin.close
                try:
                    reply = await conn.prompt(session_id=session, prompt=[acp.text_block(step["prompt"])])
                    say({"stopReason": reply.stop_reason})
                except acp.RequestError as e:
                    say({"error": str(e)})
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
