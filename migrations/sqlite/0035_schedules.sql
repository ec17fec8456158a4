-- Schedules (issue 27, docs/schedules.md): a prompt an agent runs on its own.
-- A worker's scheduler takes a due schedule's row (`for update skip locked`),
-- inserts its fire — unique by (schedule, fire time) — creates the run through
-- the send transaction and moves `next_fire_at`, all in one transaction: a fire
-- happens once whatever the number of replicas, restarts and clocks.
create table schedules (
    id text primary key,
    user_id text not null references users(id) on delete cascade,
    name text not null,
    -- the agent (sessions.mode) the fire's run uses
    agent text not null,
    -- the model, resolved for the owner when the schedule was made or changed
    model text not null,
    prompt text not null,
    -- the trigger as its API JSON: {"cron": …} | {"every_secs": …} | {"at": …}
    trigger text not null,
    -- IANA
    timezone text not null,
    enabled bigint not null default 1,
    -- null: a new session per fire; else the session each fire writes to
    session_id text,
    -- skip | run_once
    misfire text not null,
    -- skip | queue
    overlap text not null,
    -- Unix ms; null when it will not fire again (paused, an `at` that fired)
    next_fire_at bigint,
    created_at bigint not null,
    updated_at bigint not null
);
create index schedules_user on schedules(user_id, created_at);
create index schedules_due on schedules(next_fire_at) where enabled = 1 and next_fire_at is not null;

create table schedule_fires (
    schedule_id text not null references schedules(id) on delete cascade,
    -- the time the trigger named (a manual fire: when it was asked for)
    fire_at bigint not null,
    fired_at bigint not null,
    -- 1 for "run now"
    manual bigint not null default 0,
    -- started | queued | skipped | missed | refused
    outcome text not null,
    run_id text,
    session_id text,
    detail text,
    primary key (schedule_id, fire_at)
);
create index schedule_fires_run on schedule_fires(run_id) where run_id is not null;

-- The schedule whose fire made a run: an unattended run, which never takes a
-- session's "always allow" grants (its confirm tools wait for the owner).
alter table runs add column schedule_id text;
