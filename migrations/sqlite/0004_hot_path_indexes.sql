-- Messages waiting behind an active run (double texting) are looked up by session
-- on every send and run end, and by age by the reaper: index only those rows.
create index messages_queued on messages(session_id, created_at) where queued = 1;

-- A user's active runs (the active_runs_per_user limit), without walking the
-- user's whole run history.
create index runs_user_active on runs(user_id)
    where status in ('queued', 'running', 'waiting_approval');
