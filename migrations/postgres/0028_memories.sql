-- Memory (issue 26): what the assistant remembers about each person, always
-- scoped to one user. `kind` 'fact' | 'episode' | 'procedure'; `pinned` (0/1)
-- memories always go into that person's prompt; `source_*` name the session and
-- message a memory came from (both null: added by hand). No foreign key to the
-- session: a memory outlives the conversation it came from.
create table memories (
    id text primary key,
    user_id text not null references users(id) on delete cascade,
    kind text not null check (kind in ('fact', 'episode', 'procedure')),
    text text not null,
    pinned bigint not null default 0,
    source_session_id text,
    source_message_id text,
    created_at bigint not null,
    updated_at bigint not null,
    last_used_at bigint
);
create index memories_user on memories(user_id, updated_at);
-- The person's switch (1: on), and the revision of their memories that every
-- write of one bumps: the claim returns it, and a worker reads a person's
-- memories again only when it moved.
alter table users add column memory_enabled bigint not null default 1;
alter table users add column memory_rev bigint not null default 0;
-- Which memories a run's prompt carried (JSON array of ids), for the reply.
alter table runs add column memories_used text;
