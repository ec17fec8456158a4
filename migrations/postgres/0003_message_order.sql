-- conversation order: a run's user messages, then its steps in order (assistant
-- before its tool results); messages still waiting behind a run sort last. Only
-- [0-9a-z] so every collation orders it the same way.
alter table messages add column ord text not null default '';
create index messages_session_ord on messages(session_id, ord);
