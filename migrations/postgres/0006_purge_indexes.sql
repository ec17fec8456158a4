-- The reaper purges expired login tokens and old idempotency keys periodically:
-- find them without scanning either table.
create index tokens_expiring on tokens(expires_at) where expires_at is not null;
create index idempotency_keys_created on idempotency_keys(created_at);
