-- Knowledge bases a session searches besides its agent's (issue 25; the web's
-- session settings, Lark's `/kb use NAME`): a JSON array of base ids.
alter table sessions add column knowledge text not null default '[]';
