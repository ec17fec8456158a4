-- The sources an assistant reply cites as [n] (issue 25): a JSON array of
-- citations, written with the reply; null when it cites none.
alter table messages add column citations text;
