-- Issue 24: a session's and a run's agent (the id of an `[[agents]]` entry or
-- a built-in one) was still stored under its older name, `mode`. The column is
-- renamed where it lives; the HTTP API keeps `mode` as an alias of `agent`.
alter table sessions rename column mode to agent;
alter table runs rename column mode to agent;
