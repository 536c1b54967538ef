# A scripted hostile MCP server on stdio, of either era, for `tern call`
# and `tern discover` tests. Its behaviour comes from a JSON scenario file
# (argv[1]); every message it receives is appended to the scenario's "log"
# file, one JSON object a line.
#
# Scenario keys:
#   era          "modern" (2026-07-28) or "legacy" (2025-11-25)
#   serverInfo   its name; also in every interim result's _meta (modern)
#   instructions, tools, prompts, resources   what it lists
#   call         how tools/call, prompts/get and resources/read are met:
#     notices          notifications (method, params) sent before each answer
#     notices_repeat   how many times the notices are sent (default 1)
#     notices_forever  keep sending them, never answer
#     notices_pause_every  pause 20 ms after every this many notices
#     rounds           modern: the answer by round, {"result": ...} or
#                      {"error": ...}; the round comes from requestState
#                      "r<N>" (none: round 0); a requestState of "$next" is
#                      replaced by the next round's; past the list the last
#                      answer repeats
#     asks             legacy: {"request": {method, params}, "times": N},
#                      sent one at a time, each waiting for the answer
#     result           legacy: the final result
#     task             modern, for a call that declared the tasks extension:
#                      {"created": task fields, "polls": [task fields, ...]};
#                      tools/call answers `created` as resultType "task",
#                      each tasks/get the next poll (past the list the last
#                      repeats); tasks/update and tasks/cancel are acknowledged
import json
import sys
import time

scenario = json.load(open(sys.argv[1]))
log = open(scenario["log"], "a")
era = scenario.get("era", "modern")
info = scenario.get("serverInfo", {"name": "hostile", "version": "1"})
call = scenario.get("call", {})


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(id, result=None, error=None):
    if error is not None:
        send({"jsonrpc": "2.0", "id": id, "error": error})
    else:
        send({"jsonrpc": "2.0", "id": id, "result": result})


def received():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    message = json.loads(line)
    log.write(json.dumps(message) + "\n")
    log.flush()
    return message


def notices():
    batch = [dict(n, jsonrpc="2.0") for n in call.get("notices", [])]
    if call.get("notices_forever"):
        while True:
            for n in batch:
                send(n)
            time.sleep(0.05)
    every = call.get("notices_pause_every")
    sent = 0
    for _ in range(call.get("notices_repeat", 1)):
        for n in batch:
            send(n)
            sent += 1
            if every and sent % every == 0:
                time.sleep(0.02)


polls = 0


def declared_tasks(m):
    caps = ((m.get("params") or {}).get("_meta") or {}).get(
        "io.modelcontextprotocol/clientCapabilities") or {}
    return "io.modelcontextprotocol/tasks" in (caps.get("extensions") or {})


def task_poll(m):
    global polls
    listed = call["task"]["polls"]
    answer(m["id"], dict(listed[min(polls, len(listed) - 1)], resultType="complete"))
    polls += 1


def modern_call(m):
    params = m.get("params") or {}
    if "task" in call and declared_tasks(m):
        return answer(m["id"], dict(call["task"]["created"], resultType="task"))
    state = params.get("requestState") or ""
    n = int(state[1:]) if state.startswith("r") and state[1:].isdigit() else 0
    rounds = call.get("rounds", [{"result": {"content": []}}])
    outcome = json.loads(json.dumps(rounds[min(n, len(rounds) - 1)]))
    if "error" in outcome:
        return answer(m["id"], error=outcome["error"])
    result = outcome["result"]
    result.setdefault("resultType", "complete")
    if result.get("requestState") == "$next":
        result["requestState"] = "r%d" % (n + 1)
    if result["resultType"] == "input_required":
        result.setdefault("_meta", {})["io.modelcontextprotocol/serverInfo"] = info
    answer(m["id"], result)


def legacy_call(m):
    asks = call.get("asks")
    if asks:
        for k in range(asks.get("times", 1)):
            request = dict(asks["request"], jsonrpc="2.0", id="s%d" % k)
            send(request)
            while True:
                reply = received()
                if reply.get("id") == request["id"] and "method" not in reply:
                    break
    answer(m["id"], call.get("result", {"content": []}))


def instructions():
    i = scenario.get("instructions")
    return {"instructions": i} if i is not None else {}


def listed(m, key):
    result = {key: scenario.get(key, [])}
    if era == "modern":
        result["resultType"] = "complete"
    answer(m["id"], result)


while True:
    m = received()
    if "id" not in m or "method" not in m:
        continue
    method = m["method"]
    if method == "initialize" and era == "legacy":
        answer(m["id"], dict(instructions(), protocolVersion="2025-11-25", serverInfo=info,
                             capabilities={"tools": {}, "prompts": {}, "resources": {},
                                           "logging": {}}))
    elif method == "server/discover" and era == "modern":
        answer(m["id"], dict(instructions(), resultType="complete",
                             supportedVersions=["2026-07-28"],
                             capabilities={"tools": {}, "prompts": {}, "resources": {}},
                             _meta={"io.modelcontextprotocol/serverInfo": info}))
    elif method == "tools/list":
        listed(m, "tools")
    elif method == "prompts/list":
        listed(m, "prompts")
    elif method == "resources/list":
        listed(m, "resources")
    elif method == "resources/templates/list":
        listed(m, "resourceTemplates")
    elif method in ("logging/setLevel", "ping"):
        answer(m["id"], {})
    elif method == "tasks/get" and "task" in call:
        task_poll(m)
    elif method in ("tasks/update", "tasks/cancel") and "task" in call:
        answer(m["id"], {"resultType": "complete"})
    elif method in ("tools/call", "prompts/get", "resources/read"):
        notices()
        if era == "modern":
            modern_call(m)
        else:
            legacy_call(m)
    else:
        answer(m["id"], error={"code": -32601, "message": "Method not found"})
