"""A tool-calling agent on the official SDKs, as a team would write one: the `openai` SDK with
streaming on for the model, the `mcp` SDK for the tools the MCP server offers, and plain HTTP
for the tools of tools.json. It knows only clawtest's sandbox contract (environment variables),
so the same program runs against a real provider or clawtest's gateway.

Tools from the MCP server are offered as `mcp_<name>` and called over MCP; the tools of
tools.json keep their names and are called over HTTP. Read-only tools (`list_…`, `get_…`,
`search_…`) are taken from MCP, the rest from tools.json, so one task exercises both.
"""

import asyncio
import json
import os
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI

READ_ONLY = ("list_", "get_", "search_")

# A tool call answered 429 or 5xx (clawtest's services inject such faults, as real ones fail)
# is tried again this many times before the model reads the error.
RETRIES = 3
# The errors of the services' rate-limit and server-error answers, as an MCP result carries them.
TRANSIENT_ERRORS = ("rate_limit_exceeded", "internal_server_error")


async def call_http(http, method, url, arguments):
    """The answer's text, after retrying a 429 or 5xx up to RETRIES times (no wait: the mock
    services' Retry-After is advisory; a real agent would honour it)."""
    for _ in range(RETRIES):
        answer = await http.request(method, url, json=arguments)
        if answer.status_code != 429 and answer.status_code < 500:
            return answer.text
    return (await http.request(method, url, json=arguments)).text


def transient(result):
    """Whether an MCP tool result is a rate limit or a server error."""
    if not result.isError:
        return False
    for part in result.content:
        if part.type == "text":
            try:
                if json.loads(part.text).get("error") in TRANSIENT_ERRORS:
                    return True
            except (ValueError, AttributeError):
                pass
    return False


async def call_mcp(session, name, arguments):
    """The MCP tool's result, after retrying a rate limit or server error up to RETRIES times."""
    for _ in range(RETRIES):
        result = await session.call_tool(name, arguments)
        if not transient(result):
            return result
    return await session.call_tool(name, arguments)


def http_tools():
    """The tools of tools.json that change something, as OpenAI tools, with their routes."""
    with open(os.environ["CLAWTEST_TOOLS_FILE"], encoding="utf-8") as file:
        entries = json.load(file)
    offered, routes = [], {}
    for entry in entries:
        # Workspace tools (`"workspace": true`, no endpoint) are the harness's own to run.
        if entry["name"].startswith(READ_ONLY) or "endpoint" not in entry:
            continue
        offered.append({"type": "function", "function": entry["function"]})
        routes[entry["name"]] = (entry["method"], entry["endpoint"])
    return offered, routes


async def mcp_tools(session):
    """The read-only tools of the MCP server, as OpenAI tools named `mcp_<name>`."""
    listed = await session.list_tools()
    return [
        {
            "type": "function",
            "function": {
                "name": f"mcp_{tool.name}",
                "description": tool.description or "",
                "parameters": tool.inputSchema,
            },
        }
        for tool in listed.tools
        if tool.name.startswith(READ_ONLY)
    ]


async def complete(client, model, messages, tools):
    """One streamed completion, put back together: the text and the tool calls."""
    # include_usage: OpenAI streams the token counts only when asked, and without them
    # clawtest can neither price the call nor hold it to a cost limit.
    stream = await client.chat.completions.create(
        model=model,
        messages=messages,
        tools=tools,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, calls = "", {}
    async for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for part in delta.tool_calls or []:
            call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += part.id or ""
            if part.function:
                call["name"] += part.function.name or ""
                call["arguments"] += part.function.arguments or ""
    return text, [calls[index] for index in sorted(calls)]


async def run(session, http):
    prompt = os.environ["CLAWTEST_PROMPT"]
    services = os.environ["CLAWTEST_SERVICES_URL"].rstrip("/")
    model = os.environ.get("CLAWTEST_MODEL", "gpt-4o-mini")
    max_turns = int(os.environ.get("AGENT_MAX_TURNS", "20"))
    offered, routes = http_tools()
    tools = await mcp_tools(session) + offered
    # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment, as the SDK reads them.
    client = AsyncOpenAI(max_retries=0)
    messages = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        text, calls = await complete(client, model, messages, tools)
        if not calls:
            return text
        messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                    for call in calls
                ],
            }
        )
        for call in calls:
            arguments = json.loads(call["arguments"] or "{}")
            if call["name"].startswith("mcp_"):
                result = await call_mcp(session, call["name"][len("mcp_"):], arguments)
                content = "\n".join(part.text for part in result.content if part.type == "text")
            elif call["name"] in routes:
                method, endpoint = routes[call["name"]]
                content = await call_http(http, method, services + endpoint, arguments)
            else:
                content = f"error: no tool named {call['name']}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return "I ran out of turns before finishing."


async def main_async():
    async with httpx.AsyncClient(timeout=30) as http:
        async with streamable_http_client(os.environ["CLAWTEST_MCP_URL"]) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                answer = await run(session, http)
    print(answer)


def main():
    try:
        asyncio.run(main_async())
    except Exception as error:  # the harness's stderr is kept in the trajectory
        print(f"python-agent: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
