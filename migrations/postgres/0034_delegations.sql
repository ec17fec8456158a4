-- Delegation (issue 28): the agent hands a task to another agent (`delegate`).
-- The task is a run of its own in a child session of the same person, made in
-- the transaction that stores the delegating step; the parent waits as
-- `waiting_agents` with no worker until each child ends (the child's end, in
-- its own finishing transaction, settles its delegation and puts the parent
-- back on the queue). The fourth kind of wait, beside approvals, questions and
-- plans.
alter table runs add column parent_run_id text;
-- 0 for a run a person sent; a delegated run is its parent's depth + 1
-- (`tools.delegate_max_depth` caps it).
alter table runs add column depth bigint not null default 0;
-- A delegated run's session: not listed with the person's conversations, and
-- deleted with its parent's.
alter table sessions add column parent_session_id text references sessions(id) on delete cascade;
-- The agents an agent may delegate to (JSON list of agent ids).
alter table agents add column delegates text not null default '[]';

create table delegations (
    id text primary key,
    -- the delegating (parent) run, its session and person
    run_id text not null references runs(id) on delete cascade,
    session_id text not null references sessions(id) on delete cascade,
    user_id text not null,
    step bigint not null,
    -- the `delegate` call whose result the child's answer is
    call_id text not null,
    agent text not null,
    task text not null,
    child_session_id text not null,
    child_run_id text not null,
    -- running | succeeded | failed | cancelled
    status text not null,
    -- the child's answer (or what went wrong), once it ended
    result text,
    -- 1 once the resuming worker published agent_end for it
    announced bigint not null default 0,
    created_at bigint not null,
    finished_at bigint
);
create index delegations_run_step on delegations(run_id, step);
create unique index delegations_child_run on delegations(child_run_id);
create index runs_parent on runs(parent_run_id) where parent_run_id is not null;
create index sessions_parent on sessions(parent_session_id) where parent_session_id is not null;

-- A run waiting for the runs it delegated is active: one per session, and
-- counted in its user's active runs.
drop index runs_one_active;
create unique index runs_one_active on runs(session_id)
    where status in ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_agents');
drop index runs_user_active;
create index runs_user_active on runs(user_id)
    where status in ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_agents');
