-- The knowledge bases an agent searches (issue 25): a JSON array of base names,
-- resolved per person when a run searches them.
alter table agents add column knowledge text not null default '[]';
