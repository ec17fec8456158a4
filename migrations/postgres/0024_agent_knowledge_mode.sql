-- How an agent uses its knowledge bases (issue 25): `tool` (the model calls
-- knowledge_search) or `auto` (the best passages go into the context first).
alter table agents add column knowledge_mode text not null default 'tool';
