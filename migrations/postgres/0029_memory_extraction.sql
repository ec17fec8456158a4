-- Memory extraction (issue 26). A finished turn whose person (and agent) keep
-- memory is marked `memory_pending` in the update that ends it; the
-- `memory.extract` job of its session and person reads the marked turns, and
-- clears the marks in the transaction that stores what it kept, so a job that
-- dies midway leaves the turns marked and stores nothing twice.
alter table runs add column memory_pending bigint not null default 0;
create index runs_memory_pending on runs(session_id, user_id) where memory_pending = 1;
-- The person's profile: one pinned fact per person, kept up to date by the
-- extraction (role, team, projects, preferences, style).
alter table memories add column profile bigint not null default 0;
create unique index memories_profile on memories(user_id) where profile = 1;
-- The per-agent switch: an agent with memory off recalls nothing, offers no
-- memory tools and its turns are not extracted.
alter table agents add column memory bigint not null default 1;
