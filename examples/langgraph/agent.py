"""The smallest agent on LangGraph (PyPI `langgraph`, `langchain-openai`), written its way: a
graph of a model node and a `ToolNode`, looping while the model asks for tools. The tools are
the trial's tools.json (`$CLAWTEST_TOOLS_FILE`: OpenAI function tools, each with the service
`endpoint` and `method` to call under `$CLAWTEST_SERVICES_URL`); `ChatOpenAI` reads
`OPENAI_BASE_URL` and `OPENAI_API_KEY` itself, so under clawtest the model is the gateway.

A service answering 429 or 5xx raises, and the tools node's `RetryPolicy` runs it again, as
LangGraph retries a failing node.
"""

import json
import os

import httpx
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy

SERVICES = os.environ["CLAWTEST_SERVICES_URL"].rstrip("/")


def service_tool(entry):
    """A tools.json entry as a LangChain tool that calls its service endpoint."""

    def call(**arguments):
        answer = httpx.request(entry["method"], SERVICES + entry["endpoint"], json=arguments, timeout=30)
        answer.raise_for_status()
        return answer.text

    function = entry["function"]
    return StructuredTool.from_function(
        call, name=function["name"], description=function["description"], args_schema=function["parameters"]
    )


def transient(error):
    """A rate limit or a server error: worth running the tools node again."""
    return isinstance(error, httpx.HTTPStatusError) and (
        error.response.status_code == 429 or error.response.status_code >= 500
    )


with open(os.environ["CLAWTEST_TOOLS_FILE"], encoding="utf-8") as file:
    # Workspace tools (`"workspace": true`, no endpoint) would need tools of this agent's own.
    tools = [service_tool(entry) for entry in json.load(file) if "endpoint" in entry]
model = ChatOpenAI(model=os.environ.get("CLAWTEST_MODEL", "gpt-4o-mini"), temperature=0).bind_tools(tools)

graph = StateGraph(MessagesState)
graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
graph.add_node("tools", ToolNode(tools), retry_policy=RetryPolicy(retry_on=transient, initial_interval=0.1))
graph.add_edge(START, "model")
graph.add_conditional_edges("model", tools_condition)
graph.add_edge("tools", "model")
agent = graph.compile()

if __name__ == "__main__":
    state = agent.invoke({"messages": [("user", os.environ["CLAWTEST_PROMPT"])]})
    print(state["messages"][-1].content)
