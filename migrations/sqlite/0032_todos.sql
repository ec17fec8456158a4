-- The agent's todo list per session (`todo_update`, issue 28). Each change writes
-- the whole list as a new version, tagged with the run that made it: the list as
-- it stands is the newest version of a turn still shown, so undoing a turn brings
-- back the list from before it, and a compaction (which only summarises
-- messages) never touches it. `call_key` is the call's idempotency key: a call
-- redone after its worker died finds its version instead of applying twice.
create table todo_lists (
    session_id text not null references sessions(id) on delete cascade,
    run_id text not null references runs(id) on delete cascade,
    call_key text not null,
    seq bigint not null,
    -- JSON array of {id, text, status}
    items text not null,
    created_at bigint not null,
    primary key (session_id, seq)
);
create unique index todo_lists_call on todo_lists (call_key);
