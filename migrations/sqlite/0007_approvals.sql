-- Human in the loop and long tool outputs (ARCHITECTURE §7, §8).
-- A step whose tool calls wait for approval is kept on its run until they are
-- decided: the assistant turn was streamed but is not a checkpoint yet.
alter table runs add column pending_step text;

create table approvals (
    id text primary key,
    run_id text not null references runs(id) on delete cascade,
    session_id text not null references sessions(id) on delete cascade,
    user_id text not null,
    step bigint not null,
    call_id text not null,
    name text not null,
    args text not null,
    -- pending | approved | denied | expired
    status text not null,
    decided_by text,
    -- 1 once the resuming worker published approval_decided for it
    announced bigint not null default 0,
    created_at bigint not null,
    expires_at bigint not null,
    decided_at bigint
);
create index approvals_run_step on approvals(run_id, step);
create index approvals_session_pending on approvals(session_id) where status = 'pending';
create index approvals_expiring on approvals(expires_at) where status = 'pending';

-- "always": the tool runs without asking for the rest of the session.
create table session_tool_grants (
    session_id text not null references sessions(id) on delete cascade,
    tool text not null,
    granted_by text not null,
    created_at bigint not null,
    primary key (session_id, tool)
);

-- Tool outputs over the cap, read page by page with read_output.
create table tool_outputs (
    id text primary key,
    run_id text not null,
    session_id text not null references sessions(id) on delete cascade,
    call_id text not null,
    name text not null,
    content text not null,
    bytes bigint not null,
    created_at bigint not null
);
create index tool_outputs_session on tool_outputs(session_id);

-- Each worker's view of its MCP servers (GET /v1/mcp), refreshed every few
-- seconds; rows of workers that stopped reporting are ignored, then purged.
create table mcp_status (
    worker_id text primary key,
    servers text not null,
    updated_at bigint not null
);
