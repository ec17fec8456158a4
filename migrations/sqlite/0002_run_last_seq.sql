-- high-water mark of the run's event seq, written at heartbeats and checkpoints
-- (never per event), so a new attempt continues seq even when the event log was lost.
alter table runs add column last_seq bigint not null default 0;
