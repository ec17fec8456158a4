-- Questions the agent asks a person (`ask_user`, issue 28), the second kind of
-- wait beside approvals (issue 24): a step's questions are kept with its run,
-- which waits as `waiting_input` with no worker until each is answered or
-- expires; the worker that resumes the run announces the answers
-- (`question_answered`) and gives them to the model as the calls' results.
create table questions (
    id text primary key,
    run_id text not null references runs(id) on delete cascade,
    session_id text not null references sessions(id) on delete cascade,
    user_id text not null,
    step bigint not null,
    call_id text not null,
    question text not null,
    -- JSON array of strings; empty for a free answer
    options text not null,
    multiple bigint not null default 0,
    allow_text bigint not null default 1,
    -- pending | answered | expired
    status text not null,
    -- JSON array of strings: the chosen options or the typed answer
    answer text,
    answered_by text,
    -- 1 once the resuming worker published question_answered for it
    announced bigint not null default 0,
    -- what made the answer, when a front door names it (`lark:<message id>` for
    -- a reply in a Lark chat): a message handled again after a crash finds its
    -- answer recorded instead of becoming a new run
    answer_key text,
    -- the Lark card that asks it, once sent (a resuming worker rewrites it)
    lark_message_id text,
    created_at bigint not null,
    expires_at bigint not null,
    answered_at bigint
);
create index questions_answer_key on questions(answer_key) where answer_key is not null;
create index questions_run_step on questions(run_id, step);
create index questions_session_pending on questions(session_id) where status = 'pending';
create index questions_expiring on questions(expires_at) where status = 'pending';

-- A run waiting for input is active: one per session, and counted in its
-- user's active runs.
drop index runs_one_active;
create unique index runs_one_active on runs(session_id)
    where status in ('queued', 'running', 'waiting_approval', 'waiting_input');
drop index runs_user_active;
create index runs_user_active on runs(user_id)
    where status in ('queued', 'running', 'waiting_approval', 'waiting_input');
