//! Fixed prose of `BENCHMARKS.md`: what limits the targets we miss (from profiling,
//! not from this run's numbers) and how each system was configured.

pub const LIMITS: &str = "\
### What limits the misses (profiled 2026-11-30 on this machine)

- **Embedded throughput** is bounded by SQLite's single writer. Every write \
statement is a round trip to sqlx's per-connection SQLite thread (a channel hop and a \
thread wake-up each way, about 0.1 ms on this 2-core VM under load), and a run still \
makes 13 of them while holding the write lock: the send transaction (begin, one read \
of everything it decides on, the run, the message, the idempotency key, the session's \
timestamp, commit), the claim, and the finishing transaction (begin, the reply, the \
run's totals, the session's timestamp with a count of waiting messages, commit). Throughput stays flat from 32 to \
128 users with about a third of the CPU idle, which is what a serial section looks \
like. Found and fixed on the way: the in-process queue handed jobs over one at a time \
(a claim's latency capped throughput), writers slept in SQLite's busy handler (1–100 ms \
steps) instead of queueing (now an in-process write gate), eight database round trips \
per run were cut (six of them under the write lock), and two queries scanned whole \
tables (now partial indexes). Going further means \
fewer hops per run (a writer task that runs a whole transaction in one hop), not more \
CPU.
- **Embedded TTFT overhead p50** is the same chain: the send, the claim and the context \
read are a dozen sequential SQLite hops before the model is called.
- **Idle SSE clients**: hyper keeps an 8 KiB header write buffer and a read buffer that \
grows to 16 KiB for every HTTP/1 connection (heaptrack: 24 of the 31 KiB allocated per \
client); only the touched pages count toward RSS. With glibc's default arenas that is \
19.3 KiB per client; `MALLOC_ARENA_MAX=2` (set for this scenario) gives about 16.5. \
The buffer sizes are fixed inside hyper.
- **Fixed on the way, distributed**: apalis's `PollWith` dropped the wake-up waker \
whenever the wake stream answered `Ready`, so under load the consumer slept until its \
next heartbeat (1–5 s pick-ups, the old p90 of 3.5 s); and axum leaves Nagle's \
algorithm on, so about one SSE event in twenty waited 40 ms for a delayed ACK.";

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
(`WEFT_LIMITS__ACTIVE_RUNS_PER_USER=0`, `WEFT_LIMITS__RUNS_PER_MINUTE_PER_USER=0`, \
`WEFT_LIMITS__STREAMS_PER_USER=0`, `WEFT_LIMITS__STREAMS_PER_RUN=0`, \
`WEFT_HTTP__MAX_CONNECTIONS=65536`), \
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
