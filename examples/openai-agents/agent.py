"""The smallest agent on the OpenAI Agents SDK (PyPI `openai-agents`), written the SDK's way:
one `Agent` with the trial's MCP server (`$CLAWTEST_MCP_URL`), run by `Runner` over the
Responses API, the SDK's default. The SDK's OpenAI client reads `OPENAI_BASE_URL` and
`OPENAI_API_KEY` itself, so under clawtest the model is the gateway and nothing else is set.
"""

import asyncio
import os

from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp

# The SDK uploads traces to OpenAI by default: a sandboxed agent has nowhere to send them.
set_tracing_disabled(True)


async def main():
    mcp = MCPServerStreamableHttp(params={"url": os.environ["CLAWTEST_MCP_URL"]}, cache_tools_list=True)
    async with mcp:
        agent = Agent(
            name="todo assistant",
            instructions="You manage a todo board with the tools you are given.",
            model=os.environ.get("CLAWTEST_MODEL", "gpt-4o-mini"),
            mcp_servers=[mcp],
        )
        result = await Runner.run(agent, os.environ["CLAWTEST_PROMPT"])
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
