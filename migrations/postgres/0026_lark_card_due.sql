-- A run of a Lark conversation owes its chat a final card from the moment an
-- attempt starts following it (the time it was first owed, or last claimed by
-- a sweep) until that card is shown (worker/src/lark/overdue.rs). A worker
-- killed between ending the run and showing its end leaves it set; the
-- reaper's sweep in any worker then shows the end from the run's event log.
alter table runs add column lark_card_due bigint;
create index runs_lark_card_due on runs(lark_card_due) where lark_card_due is not null;
