-- Background jobs (issue 24): durable work that is not a run — a document's
-- ingestion, a memory extraction, a schedule's delivery. One row per piece of
-- work, unique by (kind, key): enqueueing the same work twice finds the first
-- row. A worker claims a due row by compare-and-set (state 'queued' and due, or
-- 'running' with a lease that ran out), holds it with a lease it renews, and
-- ends it 'succeeded', 'failed' (with `error`) or back to 'queued' with a later
-- `run_after` (a retry with backoff). 'cancelled' rows are not claimed again; a
-- worker running one loses its lease at the next renewal.
create table jobs (
    id text primary key,
    kind text not null,
    key text not null,
    payload text not null,
    state text not null,
    attempt bigint not null default 0,
    max_attempts bigint not null,
    run_after bigint not null,
    lease_owner text,
    lease_until bigint not null default 0,
    progress text,
    error text,
    created_at bigint not null,
    updated_at bigint not null,
    finished_at bigint
);
create unique index jobs_kind_key on jobs(kind, key);
-- The claim reads only due queued rows and lapsed leases.
create index jobs_queued on jobs(run_after) where state = 'queued';
create index jobs_running on jobs(lease_until) where state = 'running';
-- The purge reads finished rows by age.
create index jobs_finished on jobs(finished_at) where finished_at is not null;
