-- What a worker keeps between runs (issue 23): every run used to read its
-- agent, its user's instructions and every skill (and the skills folder) again.
-- A worker keeps them and reads them again only when `prompt`'s `rev` moved:
-- every transaction that writes an agent, a skill or a user's instructions
-- bumps it, and the claim of a run returns it.
create table store_revisions (
    name text primary key,
    rev bigint not null
);
insert into store_revisions (name, rev) values ('prompt', 0);
