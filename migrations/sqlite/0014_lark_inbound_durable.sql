-- Lark ingress durability (issue 21): `lark_inbound` grows from a list of seen
-- message ids into the inbox. A message event is stored here, whole, before it is
-- acked; then handled; then marked handled. A gateway that dies between the two
-- leaves the row pending, and a sweeper on any gateway takes it over once its
-- lease runs out (gateway `lark::inbox`).

-- 'pending' (stored, not yet handled), 'handled', 'failed' (handling gave up; the
-- log says why). Rows from before this migration were claimed by the old code,
-- which handled or dropped them at once: they are 'handled'. Every insert names
-- its state.
alter table lark_inbound add column state text not null default 'handled';
-- The conversation (`lark_chats.chat_key`): a sweep keeps each one's order.
alter table lark_inbound add column chat_key text;
-- The raw event envelope (JSON) while pending; cleared once the row is done.
alter table lark_inbound add column payload text;
-- When the gateway read it, in µs, strictly increasing per gateway: the order
-- a sweep hands a conversation's messages over in.
alter table lark_inbound add column arrived_us bigint not null default 0;
-- One id per delivery: a retried insert whose first try did commit knows the
-- row for its own (and not a redelivery's).
alter table lark_inbound add column delivery text;
-- Who handles it, until when (unix ms); renewed by its gateway while it lives.
alter table lark_inbound add column lease_owner text;
alter table lark_inbound add column lease_until bigint not null default 0;
-- How many times it was taken (the insert is the first).
alter table lark_inbound add column attempts bigint not null default 0;
-- Pending rows are few and short-lived: the sweep, the lease renewal and the
-- gauge read only them (and the sweep looks a conversation's up by chat_key).
create index lark_inbound_pending on lark_inbound(chat_key, lease_until) where state = 'pending';
