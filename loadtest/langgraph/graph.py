"""The LangGraph side of Weft's side-by-side benchmark (BENCHMARKS.md).

One node that streams one completion from the same mock LLM server Weft's worker
calls (OpenAI Chat Completions wire, `MOCK_LLM_BASE_URL`), the equivalent of a
Weft run with one step and no tools. Served by `langgraph dev` (langgraph-api with
its in-memory runtime); `weft-loadtest bench --langgraph` starts it.
"""

import os

from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

llm = ChatOpenAI(
    model="mock",
    base_url=os.environ.get("MOCK_LLM_BASE_URL", "http://127.0.0.1:8089/v1"),
    api_key="not-needed",
    streaming=True,
    stream_usage=True,
    max_retries=2,
)


async def call_model(state: MessagesState):
    return {"messages": [await llm.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("agent", call_model)
builder.add_edge(START, "agent")
builder.add_edge("agent", END)
graph = builder.compile()
