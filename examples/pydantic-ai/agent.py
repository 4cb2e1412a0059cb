"""The smallest agent on Pydantic AI (PyPI `pydantic-ai-slim[openai,mcp]`), written its way: the
trial's `$CLAWTEST_DIR/mcp.json` read unchanged by `load_mcp_toolsets` (its `mcpServers` shape;
Pydantic AI ignores the other shapes in the file and prefixes each tool with the server's name,
`clawtest_list_tasks`), and an `openai:` model, whose provider reads `OPENAI_BASE_URL` and
`OPENAI_API_KEY` itself, so under clawtest the model is the gateway and nothing else is set.
"""

import os

from pydantic_ai import Agent
from pydantic_ai.mcp import load_mcp_toolsets

agent = Agent(
    f"openai:{os.environ.get('CLAWTEST_MODEL', 'gpt-4o-mini')}",
    instructions="You manage a todo board with the tools you are given.",
    toolsets=load_mcp_toolsets(os.path.join(os.environ["CLAWTEST_DIR"], "mcp.json")),
)

if __name__ == "__main__":
    print(agent.run_sync(os.environ["CLAWTEST_PROMPT"]).output)
