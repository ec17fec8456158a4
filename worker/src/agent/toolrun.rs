//! Runs a step's tool calls with the guards every tool gets, built-in or MCP:
//! a policy (`auto`, `confirm`, `deny`, with the session's `always` grants),
//! arguments checked against the tool's JSON schema before the call, a per-call
//! timeout, panic isolation, and an output cap (the rest is stored and paged with
//! `read_output`). Whatever goes wrong becomes text for the model: a bad call is
//! something it can correct, never a failed run.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use tracing::field::Empty;
use tracing::{Instrument, Span};
use weft_llm::ToolCall;
use weft_shared::config::{AgentConfig, MAX_CALL_TIMEOUT_SECS, ToolPolicy};
use weft_shared::event::EventKind;
use weft_shared::store::ToolResult;
use weft_tools::ToolContext;

use crate::Inner;
use crate::RunStop;
use crate::emitter::Emitter;

/// How one call is handled, decided before anything of its step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Disposition {
    Run,
    /// Waits for a person's yes.
    Confirm,
    /// Answered without running: the text the model gets.
    Answer(String),
}

pub(super) struct ToolRunner<'a> {
    inner: &'a Inner,
    ctx: ToolContext,
    /// Tools the session's owner allowed with `always`.
    grants: HashSet<String>,
    /// Which tools the session's agent may use, and its own policies.
    agent: AgentConfig,
}

impl<'a> ToolRunner<'a> {
    pub fn new(
        inner: &'a Inner,
        ctx: ToolContext,
        grants: HashSet<String>,
        agent: AgentConfig,
    ) -> Self {
        ToolRunner {
            inner,
            ctx,
            grants,
            agent,
        }
    }

    /// The agent's policies, then `[tools.policies]` (each by the tool's name,
    /// then `mcp:<server>` for MCP tools), then the tool's own default
    /// (`confirm` for tools with side effects).
    fn policy(&self, name: &str) -> ToolPolicy {
        let server = name.split_once("__").map(|(s, _)| format!("mcp:{s}"));
        for policies in [
            &self.agent.tool_policies,
            &self.inner.deps.config.tools.policies,
        ] {
            if let Some(p) = policies.get(name) {
                return *p;
            }
            if let Some(p) = server.as_ref().and_then(|s| policies.get(s)) {
                return *p;
            }
        }
        self.inner
            .tools()
            .get(name)
            .map_or(ToolPolicy::Deny, |t| t.default_policy())
    }

    pub fn dispose(&self, call: &ToolCall) -> Disposition {
        let tools = self.inner.tools();
        let Some(tool) = tools.get(&call.name) else {
            return Disposition::Answer(format!("error: there is no tool named {:?}", call.name));
        };
        if !self.agent.allows_tool(&call.name) {
            return Disposition::Answer(format!(
                "error: {} is not available to this agent",
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
            ToolPolicy::Confirm if !self.grants.contains(&call.name) => Disposition::Confirm,
            ToolPolicy::Confirm | ToolPolicy::Auto => Disposition::Run,
        }
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
        let all = futures::future::join_all(calls.iter().map(|(c, d)| {
            let span = tool_span(c);
            async move {
                let t0 = Instant::now();
                let out = match d {
                    Disposition::Run => self.call(c).await,
                    Disposition::Answer(text) => Err(text.clone()),
                    Disposition::Confirm => Err("error: this call was not approved".into()),
                };
                let took = t0.elapsed();
                let span = Span::current();
                span.record("ok", out.is_ok())
                    .record("duration_ms", took.as_millis() as u64);
                if out.is_err() {
                    span.record("otel.status_code", "ERROR");
                }
                (c, out, took)
            }
            .instrument(span)
        }));
        let done = tokio::select! {
            _ = stop.token.cancelled() => return None,
            done = all => done,
        };
        let mut results = Vec::with_capacity(done.len());
        for (c, out, took) in done {
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

    /// One call with its timeout; a panic inside the tool is its error, not the run's.
    async fn call(&self, c: &ToolCall) -> Result<String, String> {
        let secs = self
            .inner
            .deps
            .config
            .tools
            .call_timeout_secs
            .clamp(1, MAX_CALL_TIMEOUT_SECS);
        let tools = self.inner.tools();
        let fut = AssertUnwindSafe(tools.call(&c.name, c.args.clone(), &self.ctx)).catch_unwind();
        match tokio::time::timeout(Duration::from_secs(secs), fut).await {
            Err(_) => Err(format!(
                "the tool did not answer within {secs} s and was stopped"
            )),
            Ok(Err(_panic)) => {
                tracing::error!(tool = %c.name, "tool panicked");
                Err("the tool crashed".into())
            }
            Ok(Ok(out)) => out,
        }
    }

    /// Output over the cap is stored whole; the model gets the head and a pointer.
    async fn cap(&self, c: &ToolCall, content: String) -> String {
        let cap = self.inner.deps.config.tools.output_cap_bytes as usize;
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
            Ok(id) => super::output::head_with_pointer(&content, cap, &id),
            Err(e) => {
                tracing::warn!(error = %e, "storing a long tool output failed; truncating it");
                super::output::head_only(&content, cap)
            }
        }
    }
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
    use super::validate_args;
    use serde_json::json;

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
