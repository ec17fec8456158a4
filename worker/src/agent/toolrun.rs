//! Runs a step's tool calls with the guards every tool gets, built-in or MCP:
//! a policy (`auto`, `confirm`, `deny`, with the session's `always` grants),
//! arguments checked against the tool's JSON schema before the call, a per-call
//! timeout, panic isolation, and an output cap (the rest is stored and paged with
//! `read_output`). Whatever goes wrong becomes text for the model: a bad call is
//! something it can correct, never a failed run.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use tracing::field::Empty;
use tracing::{Instrument, Span};
use weft_config::{AgentConfig, Config, MAX_CALL_TIMEOUT_SECS, ToolPolicy};
use weft_llm::{ToolCall, ToolSpec};
use weft_shared::event::EventKind;
use weft_store::ToolResult;
use weft_tools::ToolContext;

use crate::Inner;
use crate::RunStop;
use crate::emitter::Emitter;

/// Whether a call of `name` only reads (plan mode offers and runs only
/// these): `[tools] read_only` by the tool's name, then by `mcp:<server>`,
/// then what the tool declares ([`weft_tools::Tool::read_only`]).
pub(super) fn read_only(cfg: &Config, tool: &dyn weft_tools::Tool, name: &str) -> bool {
    let overrides = &cfg.tools.read_only;
    overrides
        .get(name)
        .or_else(|| {
            name.split_once("__")
                .and_then(|(server, _)| overrides.get(&format!("mcp:{server}")))
        })
        .copied()
        .unwrap_or_else(|| tool.read_only())
}

/// How one call is handled, decided before anything of its step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Disposition {
    Run,
    /// Waits for a person's yes.
    Confirm,
    /// `ask_user`: waits for a person's answer.
    Ask,
    /// `propose_plan` in plan mode: waits for a person's decision on the plan.
    Plan,
    /// `delegate`: waits for the run it hands to another agent.
    Delegate,
    /// Answered without running, as an error: the text the model gets.
    Answer(String),
    /// Answered without running by a person (`ask_user`): the text the model
    /// gets, as the call's result.
    Answered(String),
}

pub(super) struct ToolRunner<'a> {
    inner: &'a Inner,
    ctx: ToolContext,
    /// Tools the session's owner allowed with `always`.
    grants: HashSet<String>,
    /// Which tools the session's agent may use, and its own policies.
    agent: AgentConfig,
    /// The attempt's config (tool policies, timeouts, caps).
    cfg: Arc<Config>,
    /// The session searches knowledge bases of its own.
    session_bases: bool,
    /// The tools the model was offered: a call of any other is refused (a
    /// memory tool in a run with memory off, say).
    offered: Arc<Vec<ToolSpec>>,
    /// Plan mode before a plan was approved: only read-only tools run.
    planning: bool,
    /// The run's delegation depth (`delegate` is refused at
    /// `tools.delegate_max_depth`).
    depth: u32,
}

impl<'a> ToolRunner<'a> {
    pub fn new(
        inner: &'a Inner,
        ctx: ToolContext,
        grants: HashSet<String>,
        agent: AgentConfig,
        cfg: Arc<Config>,
        session_bases: bool,
        offered: Arc<Vec<ToolSpec>>,
    ) -> Self {
        ToolRunner {
            inner,
            ctx,
            grants,
            agent,
            cfg,
            session_bases,
            offered,
            planning: false,
            depth: 0,
        }
    }

    /// For a run at delegation depth `depth`.
    pub fn at_depth(self, depth: u32) -> Self {
        ToolRunner { depth, ..self }
    }

    /// For a step made in plan mode: only read-only tools run.
    pub fn while_planning(self, planning: bool) -> Self {
        ToolRunner { planning, ..self }
    }

    /// Every policy that speaks to this call, and the strictest wins (`deny` >
    /// `confirm` > `auto`): the agent's and `[tools.policies]`, each by the
    /// tool's name and by `mcp:<server>`, and for an MCP tool its server's
    /// `policy`. An agent cannot loosen what the administrator's policy
    /// tightened, nor the other way round. When none speaks, the tool's own
    /// default (`confirm` for tools with side effects, else `auto`).
    fn policy(&self, name: &str) -> ToolPolicy {
        let cfg = &self.cfg;
        let server = name.split_once("__").map(|(s, _)| s);
        let server_key = server.map(|s| format!("mcp:{s}"));
        let server_policy = server
            .and_then(|s| cfg.mcp_servers.iter().find(|m| m.name == s))
            .map(|m| m.policy);
        [&self.agent.tool_policies, &cfg.tools.policies]
            .into_iter()
            .flat_map(|policies| {
                [
                    policies.get(name),
                    server_key.as_ref().and_then(|k| policies.get(k)),
                ]
            })
            .flatten()
            .copied()
            .chain(server_policy)
            .max()
            .unwrap_or_else(|| {
                self.inner
                    .tools()
                    .get(name)
                    .map_or(ToolPolicy::Deny, |t| t.default_policy())
            })
    }

    /// How each call of a step is handled, in order. First each call gets an
    /// id of its own: a model (or a provider) may repeat an id, and a repeat
    /// would let one call's approval or refusal stand for another's, so every
    /// call after the first with an id is renamed and answered as an error
    /// without running. Then only the first `tools.max_calls_per_step` calls
    /// are considered; the rest are answered "skipped". `decided` gives what a
    /// person said to a call that waited (a resumed step): `Run` for an
    /// approved call, which runs unless it is refused now anyway (a policy
    /// turned `deny`, the tool gone); `Answer` for a denial; `Answered` for a
    /// question's answer.
    pub fn dispose_step(
        &self,
        calls: Vec<ToolCall>,
        decided: impl Fn(&ToolCall) -> Option<Disposition>,
    ) -> Vec<(ToolCall, Disposition)> {
        let cap = self.cfg.tools.max_calls_per_step as usize;
        unique_ids(calls)
            .into_iter()
            .enumerate()
            .map(|(i, (call, repeated))| {
                let d = if let Some(id) = repeated {
                    Disposition::Answer(format!(
                        "error: another call in this step has the id {id:?}; this one was not run (each call needs an id of its own)"
                    ))
                } else if i >= cap {
                    Disposition::Answer(format!(
                        "error: too many tool calls in one step: at most {cap} run, this one was skipped"
                    ))
                } else {
                    match (self.dispose(&call), decided(&call)) {
                        (refused @ Disposition::Answer(_), _) => refused,
                        (_, Some(said)) => said,
                        (now, None) => now,
                    }
                };
                (call, d)
            })
            .collect()
    }

    pub fn dispose(&self, call: &ToolCall) -> Disposition {
        let tools = self.inner.tools();
        let Some(tool) = tools.get(&call.name) else {
            return Disposition::Answer(format!("error: there is no tool named {:?}", call.name));
        };
        if call.name == weft_tools::PROPOSE_PLAN {
            return if self.planning {
                Disposition::Plan
            } else {
                Disposition::Answer(
                    "error: propose_plan is for plan mode only; nothing waits for a plan now"
                        .into(),
                )
            };
        }
        // Enforced here, whatever the model was offered or told: in plan mode
        // a tool that may change anything never runs.
        if self.planning && !read_only(&self.cfg, tool.as_ref(), &call.name) {
            return Disposition::Answer(format!(
                "error: plan mode: {} may change things, so it cannot run before the plan is \
                 approved; it did not run. Use read-only tools to research, write the plan, then \
                 call propose_plan.",
                call.name
            ));
        }
        if !self.agent.allows_tool_in(&call.name, self.session_bases) {
            return Disposition::Answer(format!(
                "error: {} is not available to this agent",
                call.name
            ));
        }
        // Not offered at the deepest level; say why to a model that calls it
        // all the same.
        if call.name == weft_tools::DELEGATE && self.depth >= self.cfg.tools.delegate_max_depth {
            return Disposition::Answer(format!(
                "error: delegation goes {} levels deep at most, and this run is at that depth; \
                 do the task yourself",
                self.cfg.tools.delegate_max_depth
            ));
        }
        if !self.offered.iter().any(|t| t.name == call.name) {
            return Disposition::Answer(format!(
                "error: {} is not available in this conversation",
                call.name
            ));
        }
        if let Err(problem) = validate_args(&tool.spec().parameters, &call.args) {
            return Disposition::Answer(format!(
                "error: invalid arguments for {}: {problem}",
                call.name
            ));
        }
        match self.policy(&call.name) {
            ToolPolicy::Deny => Disposition::Answer(format!(
                "error: {} is not allowed here (denied by the administrator's policy)",
                call.name
            )),
            // A question waits for its answer whatever the policy: asking is
            // the confirmation.
            _ if call.name == weft_tools::ASK_USER => Disposition::Ask,
            // Handing a task on is this agent's to decide, within the agents
            // it lists and the depth allowed; what the other agent does is
            // held to that agent's own policies.
            _ if call.name == weft_tools::DELEGATE => self.delegation(call),
            ToolPolicy::Confirm if !self.grants.contains(&call.name) => Disposition::Confirm,
            ToolPolicy::Confirm | ToolPolicy::Auto => Disposition::Run,
        }
    }

    /// A `delegate` call (within the depth, see `dispose`): waits for its
    /// run, or why it may not.
    fn delegation(&self, call: &ToolCall) -> Disposition {
        let agent = call.args["agent"].as_str().unwrap_or_default();
        if !self.agent.delegates.iter().any(|d| d == agent) {
            return Disposition::Answer(format!(
                "error: this agent may not delegate to {agent:?}; it may delegate to: {}",
                self.agent.delegates.join(", ")
            ));
        }
        Disposition::Delegate
    }

    /// Runs the calls whose disposition is `Run`, in parallel, and answers the
    /// others with their text; `tool_start`/`tool_end` for each. `None` when the
    /// run was stopped meanwhile.
    pub async fn run(
        &self,
        calls: &[(ToolCall, Disposition)],
        step: u32,
        em: &mut Emitter,
        stop: &RunStop,
    ) -> Option<Vec<ToolResult>> {
        for (c, _) in calls {
            em.emit(EventKind::ToolStart {
                step,
                call_id: c.id.clone(),
                name: c.name.clone(),
                args: c.args.clone(),
            })
            .await;
        }
        let all = futures::future::join_all(calls.iter().enumerate().map(|(i, (c, d))| {
            let span = tool_span(c);
            async move {
                let t0 = Instant::now();
                let events = weft_tools::EventSink::default();
                let out = match d {
                    Disposition::Run => {
                        let key = format!("{}:{step}:{i}", self.ctx.run_id);
                        self.call(c, step, key, events.clone()).await
                    }
                    Disposition::Answer(text) => Err(text.clone()),
                    Disposition::Answered(text) => Ok(text.clone()),
                    Disposition::Confirm => Err("error: this call was not approved".into()),
                    Disposition::Ask => Err("error: this question was not answered".into()),
                    Disposition::Plan => Err("error: this plan was not decided".into()),
                    Disposition::Delegate => Err("error: this delegation did not end".into()),
                };
                let took = t0.elapsed();
                let span = Span::current();
                span.record("ok", out.is_ok())
                    .record("duration_ms", took.as_millis() as u64);
                if out.is_err() {
                    span.record("otel.status_code", "ERROR");
                }
                (c, out, took, events.take())
            }
            .instrument(span)
        }));
        // A call may take minutes (a slow MCP tool, `web_fetch`): heartbeats
        // meanwhile tell clients the run is still at work.
        let done = tokio::select! {
            _ = stop.token.cancelled() => return None,
            done = em.beating(all) => done,
        };
        let mut results = Vec::with_capacity(done.len());
        for (c, out, took, events) in done {
            let (ok, content) = match out {
                Ok(s) => (true, s),
                Err(e) if e.starts_with("error:") => (false, e),
                Err(e) => (false, format!("error: {e}")),
            };
            let content = if ok {
                self.cap(c, content).await
            } else {
                content
            };
            em.emit(EventKind::ToolEnd {
                step,
                call_id: c.id.clone(),
                name: c.name.clone(),
                ok,
                output: weft_tools::preview(&content),
                duration_ms: took.as_millis() as u64,
            })
            .await;
            for ev in events {
                em.emit(ev).await;
            }
            metrics::counter!("weft_tool_calls_total", "ok" => if ok { "true" } else { "false" })
                .increment(1);
            results.push(ToolResult {
                call_id: c.id.clone(),
                name: c.name.clone(),
                content,
            });
        }
        Some(results)
    }

    /// One call with its timeout; a panic inside the tool is its error, not the
    /// run's. `step`: its step; `call_key`: its idempotency key ([`ToolContext::call_key`]);
    /// `events`: where it leaves events of its own ([`ToolContext::events`]).
    async fn call(
        &self,
        c: &ToolCall,
        step: u32,
        call_key: String,
        events: weft_tools::EventSink,
    ) -> Result<String, String> {
        let secs = self
            .cfg
            .tools
            .call_timeout_secs
            .clamp(1, MAX_CALL_TIMEOUT_SECS);
        let tools = self.inner.tools();
        let ctx = ToolContext {
            step,
            call_key,
            events,
            ..self.ctx.clone()
        };
        let fut = AssertUnwindSafe(tools.call(&c.name, c.args.clone(), &ctx)).catch_unwind();
        let out = match tokio::time::timeout(Duration::from_secs(secs), fut).await {
            Err(_) => Err(format!(
                "the tool did not answer within {secs} s and was stopped"
            )),
            Ok(Err(_panic)) => {
                tracing::error!(tool = %c.name, "tool panicked");
                Err("the tool crashed".into())
            }
            Ok(Ok(out)) => out,
        };
        self.inner
            .failure_point(crate::failure::FailurePoint::InToolCall)
            .await;
        out
    }

    /// Output over the cap is stored whole; the model gets the head and a pointer.
    async fn cap(&self, c: &ToolCall, content: String) -> String {
        let cap = self.cfg.tools.output_cap_bytes as usize;
        if content.len() <= cap {
            return content;
        }
        match self
            .inner
            .deps
            .store
            .store_tool_output(
                &self.ctx.run_id,
                &self.ctx.session_id,
                &c.id,
                &c.name,
                &content,
            )
            .await
        {
            Ok(id) => crate::context::truncate::head_with_pointer(&content, cap, &id),
            Err(e) => {
                tracing::warn!(error = %e, "storing a long tool output failed; truncating it");
                crate::context::truncate::head_only(&content, cap)
            }
        }
    }
}

/// The calls with an id of their own each: the first call with an id keeps
/// it; a later one is renamed (`<id>_dup<n>`, unused by any call of the step)
/// and comes with the id it repeated.
fn unique_ids(calls: Vec<ToolCall>) -> Vec<(ToolCall, Option<String>)> {
    let mut taken: HashSet<String> = calls.iter().map(|c| c.id.clone()).collect();
    let mut kept: HashSet<String> = HashSet::new();
    calls
        .into_iter()
        .map(|mut call| {
            if kept.insert(call.id.clone()) {
                return (call, None);
            }
            let repeated = call.id.clone();
            let fresh = (1..)
                .map(|n| format!("{repeated}_dup{n}"))
                .find(|id| !taken.contains(id))
                .expect("an unused id");
            taken.insert(fresh.clone());
            kept.insert(fresh.clone());
            call.id = fresh;
            (call, Some(repeated))
        })
        .collect()
}

/// The span of one tool call, refused ones included (never its arguments or
/// output: they may hold what the user typed).
fn tool_span(c: &ToolCall) -> Span {
    tracing::info_span!(
        "tool",
        otel.name = %format_args!("execute_tool {}", c.name),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %c.name,
        gen_ai.tool.call.id = %c.id,
        ok = Empty,
        duration_ms = Empty,
    )
}

/// Checks `args` against the tool's JSON schema; the message names what is wrong.
pub(super) fn validate_args(
    schema: &serde_json::Value,
    args: &serde_json::Value,
) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the tool's own schema is invalid ({e})"))?;
    let problems: Vec<String> = validator
        .iter_errors(args)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::{unique_ids, validate_args};
    use serde_json::json;
    use weft_llm::ToolCall;

    #[test]
    fn repeated_call_ids_are_renamed_and_marked() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "t".into(),
            args: json!({}),
        };
        let out = unique_ids(vec![
            call("a"),
            call("a"),
            call("a_dup1"),
            call("a"),
            call("b"),
        ]);
        let ids: Vec<&str> = out.iter().map(|(c, _)| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "a_dup2", "a_dup1", "a_dup3", "b"]);
        let repeated: Vec<Option<&str>> = out.iter().map(|(_, r)| r.as_deref()).collect();
        assert_eq!(repeated, [None, Some("a"), None, Some("a"), None]);
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {"url": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
            "required": ["url"],
            "additionalProperties": false
        });
        assert!(validate_args(&schema, &json!({"url": "https://x"})).is_ok());
        let missing = validate_args(&schema, &json!({})).unwrap_err();
        assert!(missing.contains("url"), "{missing}");
        let wrong = validate_args(&schema, &json!({"url": 5, "n": 0})).unwrap_err();
        assert!(wrong.contains("/url") && wrong.contains("/n"), "{wrong}");
        let extra = validate_args(&schema, &json!({"url": "x", "rm": true})).unwrap_err();
        assert!(extra.contains("rm"), "{extra}");
        assert!(validate_args(&json!({"type": 12}), &json!({})).is_err());
    }
}
