-- weft schema v1 (sqlite twin of migrations/postgres/0001_init.sql: keep them in step).
-- timestamps are unix milliseconds (bigint) so both databases share one query set.

create table users (
    id text primary key,
    username text not null unique,
    password_hash text not null,
    role text not null check (role in ('admin', 'user')),
    created_at bigint not null
);

-- api tokens (kind 'api') and web/login sessions (kind 'login'); only the sha-256 is stored.
create table tokens (
    id text primary key,
    user_id text not null references users(id) on delete cascade,
    name text not null,
    kind text not null check (kind in ('api', 'login', 'bootstrap')),
    hash text not null unique,
    created_at bigint not null,
    last_used_at bigint,
    expires_at bigint
);
create index tokens_user on tokens(user_id);

create table sessions (
    id text primary key,
    user_id text not null references users(id) on delete cascade,
    title text not null,
    title_lower text not null,
    model text not null,
    mode text not null,
    source text not null,
    created_at bigint not null,
    updated_at bigint not null
);
create index sessions_user_recent on sessions(user_id, updated_at desc, id desc);

create table runs (
    id text primary key,
    session_id text not null references sessions(id) on delete cascade,
    user_id text not null,
    status text not null,
    model text not null,
    mode text not null,
    attempt bigint not null default 0,
    worker_id text,
    heartbeat_at bigint,
    enqueued_at bigint not null,
    started_at bigint,
    finished_at bigint,
    cancel_requested bigint not null default 0,
    cancelled_by text,
    usage_input bigint not null default 0,
    usage_output bigint not null default 0,
    usage_cache_read bigint not null default 0,
    usage_reasoning bigint not null default 0,
    ttft_ms bigint,
    duration_ms bigint,
    error_code text,
    error_message text,
    final_message_id text,
    traceparent text,
    created_at bigint not null
);
-- one active run per session, enforced here and not by a lock in memory.
create unique index runs_one_active on runs(session_id)
    where status in ('queued', 'running', 'waiting_approval');
create index runs_user_created on runs(user_id, created_at);
create index runs_active_status on runs(status, heartbeat_at)
    where status in ('queued', 'running');

-- user messages waiting behind an active run have run_id null and queued = 1.
create table messages (
    id text primary key,
    session_id text not null references sessions(id) on delete cascade,
    role text not null check (role in ('user', 'assistant', 'tool')),
    content text not null,
    run_id text,
    step bigint,
    call_id text not null default '',
    name text,
    tool_calls text,
    queued bigint not null default 0,
    created_at bigint not null
);
create index messages_session on messages(session_id, id);
-- a checkpointed step is written once whatever happens (duplicate attempts do nothing).
create unique index messages_checkpoint on messages(run_id, step, role, call_id)
    where role <> 'user';

-- a retried request with the same key never creates a second message or run.
create table idempotency_keys (
    user_id text not null,
    key text not null,
    session_id text not null,
    message_id text not null,
    run_id text,
    created_at bigint not null,
    primary key (user_id, key)
);
