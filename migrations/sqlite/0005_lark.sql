-- The Lark (Feishu) bot (ARCHITECTURE §9).

-- A Lark sender is a Weft user: auto-created as `lark:<open_id>`, or an existing
-- account that an admin linked (`weft admin user link-lark`).
alter table users add column lark_open_id text;
create unique index users_lark_open_id on users(lark_open_id) where lark_open_id is not null;

-- Inbound message ids already taken, shared by every gateway replica and kept
-- across restarts: Lark redelivers an event it thinks was not acked, for hours.
create table lark_inbound (
    message_id text primary key,
    received_at bigint not null
);
create index lark_inbound_received on lark_inbound(received_at);

-- Which session a Lark conversation (a p2p chat, a group, or a topic thread)
-- talks to now; `/new` and `/resume` move it. `chat_key` is chat_id, or
-- chat_id/thread_id for a topic thread.
create table lark_chats (
    chat_key text primary key,
    chat_id text not null,
    thread_id text not null default '',
    session_id text not null references sessions(id) on delete cascade,
    updated_at bigint not null
);
-- The sessions a conversation has had, for `/sessions` and `/resume N`.
alter table sessions add column lark_chat_key text;
create index sessions_lark_chat on sessions(lark_chat_key, updated_at) where lark_chat_key is not null;

-- The Lark message a user message came from (the reply target), and the
-- THINKING reaction on it: its id while it shows, '-' once the reply ended (a
-- reaction recorded after that is removed at once by whoever records it).
alter table messages add column lark_message_id text;
alter table messages add column lark_reaction_id text;

-- The reply cards of a run (JSON array of Lark message ids: the card, then its
-- continuations), so a retried attempt on another worker updates the same cards.
alter table runs add column lark_cards text;
