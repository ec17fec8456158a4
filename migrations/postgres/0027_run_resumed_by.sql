-- The W3C trace context of the request that last decided one of a waiting
-- run's approvals: the stretch that resumes links to it, whichever job
-- resumes the run (the decision's, or the worker's own when the decision came
-- while it was still handing the run to the database).
alter table runs add column resumed_by text;
