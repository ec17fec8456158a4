-- A person's inbox (issue 27, docs/schedules.md "Notifications"): what
-- happened while nobody watched — a scheduled run that ended, or that waits
-- for its owner's decision. Written in the transaction that ends the run (or
-- stores its waits), unique by `key`, so a retried end never notifies twice.
create table notifications (
    id text primary key,
    user_id text not null references users(id) on delete cascade,
    -- schedule_finished | schedule_waiting
    kind text not null,
    -- `<run>:end` or `<run>:<step>:wait`
    key text not null unique,
    title text not null,
    body text not null,
    session_id text,
    run_id text,
    schedule_id text,
    created_at bigint not null,
    read_at bigint
);
create index notifications_user on notifications(user_id, created_at);
create index notifications_unread on notifications(user_id) where read_at is null;
