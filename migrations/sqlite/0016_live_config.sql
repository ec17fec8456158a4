-- Config reloaded live (issue 22).

-- The admins' settings saved from the web (models, limits, tool policies, web
-- tools, MCP servers): one JSON document over the file and the environment,
-- and a version every replica polls. A reload from the file bumps the version
-- too, so every replica reads its config again within a poll.
create table config_settings (
    id bigint primary key,
    document text not null default '{}',
    version bigint not null,
    updated_at bigint not null,
    updated_by text
);

-- The agent as `weft.toml` last defined it (JSON), so a reload updates the
-- fields the file changed and keeps those an admin edited since.
alter table agents add column from_file text;
