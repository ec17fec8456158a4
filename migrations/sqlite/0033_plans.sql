-- Plan mode (issue 28): a run sent with `plan: true` researches with read-only
-- tools and proposes a plan; the plan is the third kind of wait (beside
-- approvals and questions): the run waits as `waiting_input` with no worker
-- until the first decision — `approved` (the run goes on with every tool),
-- `revised` (the comment goes back to the agent, which proposes again),
-- `rejected` or `expired` (the run ends with the plan as its reply).
alter table runs add column plan bigint not null default 0;

create table plans (
    id text primary key,
    run_id text not null references runs(id) on delete cascade,
    session_id text not null references sessions(id) on delete cascade,
    user_id text not null,
    step bigint not null,
    -- the `propose_plan` call the decision answers
    call_id text not null,
    markdown text not null,
    -- proposed | approved | rejected | revised | expired
    status text not null,
    comment text,
    decided_by text,
    -- 1 once the resuming worker published plan_decided for it
    announced bigint not null default 0,
    -- what made the decision, when a front door names it (`lark:<message id>`
    -- for a reply in a Lark chat, which revises)
    decision_key text,
    -- the Lark card that shows it, once sent
    lark_message_id text,
    created_at bigint not null,
    expires_at bigint not null,
    decided_at bigint
);
create index plans_decision_key on plans(decision_key) where decision_key is not null;
create index plans_run_step on plans(run_id, step);
create index plans_session on plans(session_id);
create index plans_expiring on plans(expires_at) where status = 'proposed';
