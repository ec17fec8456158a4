-- Channels and the delivery outbox (issue 27, docs/schedules.md "Channels"):
-- where a person's notifications go besides the inbox. A schedule names its
-- channels (schedule_channels); the transaction that writes a notification of
-- its run also writes one `deliveries` row per channel and a `notify.deliver`
-- job for it, so a delivery exists exactly when its notification does, once.
create table channels (
    id text primary key,
    user_id text not null references users(id) on delete cascade,
    name text not null,
    -- lark | webhook | email
    kind text not null,
    -- the target's settings as JSON: lark {chat_id?}, webhook {url, secret}, email {to}
    config text not null,
    -- 1: also every wait (approval, question, plan) of the owner's own runs
    -- outside Lark conversations, not only their schedules' notifications
    waits bigint not null default 0,
    created_at bigint not null,
    updated_at bigint not null
);
create unique index channels_user_name on channels(user_id, name);

create table schedule_channels (
    schedule_id text not null references schedules(id) on delete cascade,
    channel_id text not null references channels(id) on delete cascade,
    primary key (schedule_id, channel_id)
);
create index schedule_channels_channel on schedule_channels(channel_id);

create table deliveries (
    id text primary key,
    notification_id text not null references notifications(id) on delete cascade,
    -- no foreign key: a deleted channel's history stays, its name gone
    channel_id text not null,
    user_id text not null,
    run_id text,
    -- pending | delivered | failed
    status text not null,
    -- what is delivered: the outcome and the reply (or what the run waits
    -- for), up to 4,000 characters (the inbox keeps 300)
    text text not null,
    attempts bigint not null default 0,
    error text,
    created_at bigint not null,
    delivered_at bigint,
    unique (notification_id, channel_id)
);
create index deliveries_run on deliveries(run_id) where run_id is not null;
create index deliveries_channel on deliveries(channel_id, created_at);

-- A person's timezone (IANA; null: `schedules.default_timezone`), the default
-- of the schedules they make (`PUT /v1/me/timezone`).
alter table users add column timezone text;
