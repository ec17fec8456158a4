-- A worker keeps the sessions it served in memory and reads only what changed
-- (issue 23): every run used to read up to 1,000 messages of its session.
--
-- `sessions.msg_seq` counts the session's message writes: every transaction
-- that inserts messages takes the session's row, stamps them with
-- `msg_seq + 1` and bumps it, so a reader that has seen every message up to
-- `seq` N has missed exactly those with `seq > N`. `sessions.history_rev` is
-- bumped by every change to messages already written (undo, redo, retry,
-- edit, choosing an alternative, queued messages joining a run): a reader
-- whose copy has another `history_rev` reads the session again.
alter table messages add column seq bigint not null default 0;
alter table sessions add column msg_seq bigint not null default 0;
alter table sessions add column history_rev bigint not null default 0;
create index messages_session_seq on messages(session_id, seq);
