//! Fixed prose of `BENCHMARKS.md`: how each system was configured.

pub const CONFIGURATION: &str = "\
How each side was configured (the same for every row above):

- **Mock LLM**: a fresh `weft-loadtest mock-llm` process per scenario (OpenAI Chat \
Completions wire, streaming). Each message scripts its reply: `@mock.tokens N @mock.delay TTFT ITL`. \
The TTFT overhead is the client-observed time from sending the message to the first text \
token, minus the TTFT the mock was told to wait; *stream lag* is, for every text event, \
its arrival time minus the moment the mock's schedule emits the last token it carries.
- **Client**: `weft-loadtest` closed loop: every virtual user sends one message, reads the \
whole streamed reply, checks it word for word, and sends the next one. Same client code, \
same mock, same machine, for both systems.
- **Weft embedded**: `weft up` (SQLite + in-process queue and bus), model `mock-http` = the \
mock LLM via the `openai` provider; per-user limits disabled \
(`WEFT_LIMITS__ACTIVE_RUNS_PER_USER=0`, `WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER=0`), \
`RUST_LOG=warn`, default worker concurrency (256) and coalescing (25 ms) unless a scenario \
lists extra settings. Users are spread over 50 accounts created through the admin API; \
each user signs in and keeps one session.
- **Weft distributed**: one `weft serve` and one `weft worker` (two for chaos), a fresh \
Postgres database and a Redis key prefix of their own, same settings.
- **LangGraph**: `langgraph dev --no-reload --n-jobs-per-worker 256` (langgraph-api with its \
in-memory runtime, the open-source server), serving `loadtest/langgraph/graph.py`: one node \
that streams one completion from the same mock LLM through `langchain_openai.ChatOpenAI`. \
Each user creates a thread and, per turn, `POST /threads/{id}/runs/stream` with \
`stream_mode: [\"messages-tuple\"]`. 256 jobs per worker matches Weft's worker concurrency \
(LangGraph's default is 10, which would queue most of the 50 users). Tracing and analytics \
are off.";
