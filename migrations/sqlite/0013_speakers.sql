-- Issue 21: who said each user message. In a Lark group every member speaks in
-- one shared session, so the message's author is not always the session's
-- owner: `author_id` is the Weft user who sent it (null on rows written before
-- this migration: the session's owner), `author_name` the name the others and
-- the model see ("[Alice] …"), set only in shared conversations.
alter table messages add column author_id text;
alter table messages add column author_name text;
