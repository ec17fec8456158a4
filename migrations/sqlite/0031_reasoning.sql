-- The model's reasoning before an assistant message (issue 28): a JSON array of
-- blocks (weft_wire::reasoning::Reasoning), thinking text with Anthropic's
-- signature, which a tool step's next request must send back unchanged, and
-- which people see after a reload; null when the model gave none.
alter table messages add column reasoning text;
