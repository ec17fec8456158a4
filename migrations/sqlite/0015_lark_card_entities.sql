-- Lark cards as good as they get (issue 21).

-- The approval card a Lark conversation was asked with (its message id), so the
-- card is rewritten without buttons however the approval ends: decided on the
-- web, in the REPL or in Lark, expired, or left open by a reply that stopped.
alter table approvals add column lark_message_id text;

-- `runs.lark_cards` (0005) now holds objects as well as message ids:
-- {"message_id", "card_id", "created_ms"} for a reply card streamed through a
-- CardKit card entity (`message_id` null between creating the entity and
-- sending it). Plain strings, written before, still read as patched cards.
