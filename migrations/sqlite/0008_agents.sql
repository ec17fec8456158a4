-- Agents, user instructions, long-conversation summaries, undo / regenerate
-- (ARCHITECTURE §8). A session's `mode` column holds its agent's id.
create table agents (
    id text primary key,
    name text not null,
    description text not null default '',
    -- the model a new session with this agent uses (none: the default model)
    model text,
    instructions text not null default '',
    -- JSON array of allowed tools (built-in names, mcp:<server>,
    -- mcp:<server>__<tool>); null = every tool
    tools text,
    -- JSON object: tool name (or mcp:<server>) -> auto | confirm | deny
    tool_policies text not null default '{}',
    -- JSON array of allowed skill names; null = every skill
    skills text,
    max_steps bigint,
    is_default bigint not null default 0,
    -- builtin | config | admin
    origin text not null,
    created_at bigint not null,
    updated_at bigint not null
);

alter table users add column instructions text not null default '';

-- The summary of a session's older messages (up to and including `upto_ord`),
-- reused by later runs until the unsummarised part grows too long again.
create table session_summaries (
    session_id text primary key references sessions(id) on delete cascade,
    upto_ord text not null,
    summary text not null,
    messages bigint not null,
    model text not null,
    created_at bigint not null
);

-- 0 shown; 1 undone (redo brings it back); 2 a reply kept as an alternative.
alter table messages add column hidden bigint not null default 0;
-- A regenerated (or edited) turn's runs point at the turn's first run.
alter table runs add column turn_of text;

-- `/compact`: the next run summarises all but the latest turn first.
alter table sessions add column compact_requested bigint not null default 0;
-- The user text a run answered, when a later edit changed it (so switching back
-- to that reply restores the question it answered).
alter table runs add column user_text text;
-- How full the model's window was on the run's last step.
alter table runs add column context_tokens bigint not null default 0;
alter table runs add column context_window bigint not null default 0;

-- Skills uploaded by admins (folders under `skills_dir` are read from disk).
create table skills (
    name text primary key,
    description text not null,
    body text not null,
    -- JSON object: file name -> text, the files beside SKILL.md
    files text not null default '{}',
    updated_at bigint not null
);
