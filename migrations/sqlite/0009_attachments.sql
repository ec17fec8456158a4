-- Attachments (issue 15): images and documents sent with a user message.
-- The bytes live in the file store under their sha256 (shared/src/blobs.rs);
-- `blobs` registers each stored hash so orphans can be found and swept, and
-- `attachments` says which message carries which hash under which name.
create table blobs (
    sha256 text primary key,
    bytes bigint not null,
    -- refreshed by every upload of the same bytes: the sweeper keeps a blob
    -- touched within its grace period even while no row refers to it yet
    touched_at bigint not null
);
create index blobs_touched on blobs(touched_at);

create table attachments (
    id text primary key,
    message_id text not null references messages(id) on delete cascade,
    session_id text not null references sessions(id) on delete cascade,
    user_id text not null,
    position bigint not null,
    name text not null,
    kind text not null check (kind in ('image', 'document')),
    mime text not null,
    bytes bigint not null,
    sha256 text not null,
    -- characters of extracted text (documents)
    text_chars bigint,
    created_at bigint not null
);
create index attachments_message on attachments(message_id, position);
create index attachments_sha on attachments(sha256);
