//! Executes one claimed run: the agent loop (docs/runs.md, "One chat turn, in
//! full", steps 3–5; docs/agent.md).
//!
//! An attempt is a few named steps: [`Attempt::open`] (events, checkpoints,
//! model, context), then per agent step [`Attempt::step`] (stream the model →
//! dispose of its tool calls → run them → checkpoint), and one of three ends:
//! the run ends here ([`finish`]), it waits for a person ([`approval`]), or this
//! attempt leaves it to another worker. Every branch returns a [`Flow`]; stop
//! requests (cancel, lost lease, shutdown, time limit) are turned into a flow in
//! one place, [`Attempt::stopped`].
//!
//! Steps before `resume_step` were checkpointed by an earlier attempt and are
//! never executed again. No database transaction is held across an LLM or tool
//! call; nothing is written per token.

mod citations;
mod delegate;
mod finish;
mod knowledge;
mod memory;
mod output;
mod plan;
mod schedules;
mod skills;
mod step;
mod todos;
mod toolrun;
mod wait;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;
use weft_config::{AgentConfig, Config};
use weft_llm::{ChatMessage, ChatRequest, ToolCall, ToolSpec, Usage};
use weft_shared::api::{ErrorBody, ToolCallDto};
use weft_shared::event::EventKind;
use weft_store::{ClaimedRun, RunEnd, StepCheckpoint, ToolResult};
use weft_tools::ToolContext;
use weft_tools::sources::Sources;

pub(crate) use finish::release;
pub(crate) use knowledge::KnowledgeSearch;
pub(crate) use memory::{Forget, MemoryCopies, MemorySearch, Remember};
pub(crate) use output::ReadOutput;
pub(crate) use schedules::{ScheduleCreate, ScheduleList};
pub(crate) use skills::UseSkill;
pub(crate) use todos::TodoUpdateTool;

use crate::context::{self, window::ContextUse};
use crate::emitter::Emitter;
use crate::providers::{ModelEntry, Providers};
use crate::{Inner, RunStop, StopReason};
use step::{Said, StepOutcome, Timing};
use toolrun::{Disposition, ToolRunner};

/// How an attempt left its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Execution {
    /// The run ended here: its terminal event is published.
    Ended,
    /// The run waits for approvals; no worker holds it.
    Waiting,
    /// The run goes on elsewhere (taken over, released at shutdown, or left to
    /// the reaper after a database error): no terminal event from this attempt.
    Abandoned,
}

/// What the loop does next.
enum Flow {
    /// Run the next step.
    Next,
    /// End the run.
    End(RunEnd),
    /// Stop this attempt without ending the run.
    Leave(Leave),
}

enum Leave {
    /// Another worker owns the run, or the reaper will hand it on.
    Abandon,
    /// Shutdown: give the run back so another worker resumes it now.
    Release,
    /// Suspended for approvals.
    Waiting,
}

pub(crate) async fn execute(
    inner: Arc<Inner>,
    run: ClaimedRun,
    stop: Arc<RunStop>,
    seq_out: tokio::sync::oneshot::Sender<Arc<std::sync::atomic::AtomicU64>>,
) -> Execution {
    let mut attempt = match Attempt::open(&inner, run, stop, seq_out).await {
        Ok(a) => a,
        Err(exec) => return exec,
    };
    let limit = Duration::from_secs(inner.deps.config().worker.max_run_secs);
    let timer = attempt.stop.clone();
    let deadline = tokio::spawn(async move {
        tokio::time::sleep(limit).await;
        timer.stop(StopReason::TimeLimit);
    });
    let flow = attempt.run().await;
    deadline.abort();
    attempt.conclude(flow).await
}

/// One attempt at one run.
struct Attempt<'a> {
    inner: &'a Arc<Inner>,
    run: ClaimedRun,
    stop: Arc<RunStop>,
    em: Emitter,
    timing: Timing,
    usage: Usage,
    started: Instant,
    /// The first step this attempt executes.
    step: u32,
    /// Built by [`Attempt::run`] once the model (and so its window) is known.
    /// Shared with the step's request (no copy per step); appended to after it.
    messages: Arc<Vec<ChatMessage>>,
    system: String,
    /// How full the model's window is (reported in `usage`).
    context: ContextUse,
    /// The session's agent: its tools, policies and step limit apply.
    agent: AgentConfig,
    /// The config this attempt started with: a reload meanwhile does not
    /// change a run half-way.
    cfg: Arc<Config>,
    providers: Arc<Providers>,
    tools: Arc<Vec<ToolSpec>>,
    /// Room in the worker's image budget for the images in `messages`.
    _images_held: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The passages this run's tools numbered for citing.
    sources: Arc<Sources>,
}

impl<'a> Attempt<'a> {
    /// Events, checkpoints, `run_started`, and the context. `Err` when the run
    /// cannot be executed by this attempt at all.
    async fn open(
        inner: &'a Arc<Inner>,
        run: ClaimedRun,
        stop: Arc<RunStop>,
        seq_out: tokio::sync::oneshot::Sender<Arc<std::sync::atomic::AtomicU64>>,
    ) -> Result<Attempt<'a>, Execution> {
        let cfg = inner.deps.config();
        // An earlier attempt (or an earlier stretch before an approval) may have
        // published events and checkpointed steps.
        let resumed = run.attempt > 1 || run.last_seq > 0;
        let em = Emitter::new(
            inner.deps.bus.clone(),
            run.id.clone(),
            Duration::from_millis(cfg.worker.coalesce_ms),
            run.last_seq,
            resumed,
        )
        .await
        .with_byte_cap(cfg.events.max_bytes_per_run);
        let _ = seq_out.send(em.seq_handle());
        let checkpoint = if resumed {
            inner.deps.store.last_checkpoint(&run.id).await
        } else {
            Ok(0)
        };
        let step = match checkpoint {
            Ok(step) => step + 1,
            Err(e) => {
                tracing::error!(error = %e, "loading checkpoints failed; leaving the run to the reaper");
                return Err(Execution::Abandoned);
            }
        };
        let (agent, system, has_skills) = match context::system_for(
            &inner.prompt_inputs,
            &inner.deps.store,
            &run,
            &cfg.skills_dir(),
        )
        .await
        {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(error = %e, "loading the agent failed; leaving the run to the reaper");
                return Err(Execution::Abandoned);
            }
        };
        // A tool the agent may not use is never offered (and refused if called).
        let registry = inner.tools();
        let tools = registry
            .specs()
            .into_iter()
            .filter(|t| {
                // Offered to a run sent in plan mode, to its end: its history
                // may hold the call.
                t.name == weft_tools::PROPOSE_PLAN && run.plan
                    || agent.allows_tool_in(&t.name, !run.session_knowledge.is_empty())
            })
            .filter(|t| has_skills || t.name != "use_skill")
            .filter(|t| {
                memory::applies(&run, &cfg, &agent)
                    || !weft_config::agents::MEMORY_TOOLS.contains(&t.name.as_str())
            })
            .filter(|t| !run.planning || plan::offered_while_planning(&registry, &cfg, &t.name))
            .filter(|t| t.name != weft_tools::DELEGATE || run.depth < cfg.tools.delegate_max_depth)
            .collect::<Vec<_>>()
            .into();
        let mut system = system;
        if run.planning {
            system.push_str(plan::PLAN_MODE_PROMPT);
        }
        let mut run = run;
        run.remember_after = memory::extraction_after(&run, &cfg, &agent);
        Ok(Attempt {
            inner,
            timing: Timing {
                ttft_ms: None,
                created_at: run.created_at,
            },
            messages: Default::default(),
            system,
            context: ContextUse::default(),
            _images_held: None,
            run,
            stop,
            em,
            usage: Usage::default(),
            started: Instant::now(),
            step,
            agent,
            tools,
            cfg,
            providers: inner.providers(),
            sources: Arc::default(),
        })
    }

    /// A run whose model a reload removed goes on with the default one, and so
    /// does its session from now on; the model it named, when it fell back.
    async fn fall_back_if_gone(&mut self) -> Option<String> {
        if self.providers.get(&self.run.model).is_some() {
            return None;
        }
        let default = self.providers.default_id()?.to_owned();
        let gone = std::mem::replace(&mut self.run.model, default);
        tracing::warn!(model = %gone, fallback = %self.run.model, "the run's model is no longer configured; using the default");
        if let Err(e) = self
            .inner
            .deps
            .store
            .fall_back_model(&self.run.id, &self.run.session_id, &gone, &self.run.model)
            .await
        {
            tracing::warn!(error = %e, "recording the model fallback failed");
        }
        Some(gone)
    }

    /// Until the run ends or this attempt leaves it.
    async fn run(&mut self) -> Flow {
        // A step that waited for approvals resumes where it stopped: its text
        // was streamed, so clients keep it (`resume_step` is the step after it).
        // The claim read it.
        let pending = self.run.pending_step.take();
        let resume_step = pending.as_ref().map_or(self.step, |p| p.step + 1);
        let fell_back = self.fall_back_if_gone().await;
        self.em
            .emit(EventKind::RunStarted {
                session_id: self.run.session_id.clone(),
                model: self.run.model.clone(),
                attempt: self.run.attempt,
                resume_step,
            })
            .await;
        if self.run.cancel_requested {
            return Flow::End(RunEnd::Cancelled {
                partial: String::new(),
                step: self.step,
            });
        }
        if let Some(gone) = fell_back {
            let notice = format!(
                "_The model {gone} is no longer configured; this conversation now uses {}._\n\n",
                self.run.model
            );
            self.em
                .emit(EventKind::Text {
                    step: self.step,
                    delta: notice,
                })
                .await;
        }
        let Some(model) = self.providers.get(&self.run.model).cloned() else {
            return Flow::End(RunEnd::Failed {
                error: ErrorBody {
                    code: "unknown_model".into(),
                    message: format!("model {:?} is not configured", self.run.model),
                },
                partial: String::new(),
                step: self.step,
            });
        };
        match self.access(&model).await {
            Ok(()) => {}
            Err(flow) => return flow,
        }
        match context::window::build(self.inner, &self.cfg, &self.run, &model, &self.system).await {
            Ok(built) => {
                self.messages = Arc::new(built.messages);
                self.context = built.used;
                self._images_held = built.images_held;
                if built.others_spoke {
                    self.without_memory();
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "loading context failed; leaving the run to the reaper");
                return Flow::Leave(Leave::Abandon);
            }
        }
        // Numbered first, as in the attempt that first ran: then the numbers
        // the tool outputs of earlier steps gave.
        self.knowledge_before_the_question().await;
        self.todos_before_the_question().await;
        self.recall().await;
        citations::learn(&self.sources, &self.messages);
        if let Some(background) = self.inner.group_background(&self.run.id).await {
            context::before_the_question(
                Arc::make_mut(&mut self.messages).as_mut_slice(),
                &background,
            );
        }
        if let Some(pending) = pending {
            self.step = pending.step;
            let span = step_span(self.step);
            match wait::resume(self, pending).instrument(span).await {
                Flow::Next => self.step += 1,
                other => return other,
            }
        }
        loop {
            let span = step_span(self.step);
            match self.step(&model).instrument(span).await {
                Flow::Next => self.step += 1,
                other => return other,
            }
        }
    }

    /// Who the run's tools act for, and its numbered sources.
    fn tool_context(&self) -> ToolContext {
        ToolContext {
            run_id: self.run.id.0.clone(),
            session_id: self.run.session_id.0.clone(),
            user_id: self.run.user_id.0.clone(),
            sources: self.sources.clone(),
            call_key: String::new(),
            step: 0,
            events: Default::default(),
        }
    }

    /// The run's user must still be allowed its model and its agent
    /// (`allowed_users`, `allowed_roles`): the gateway checked when the run was
    /// made, but the lists may have changed since (a config change, an admin's
    /// edit), and follow-up runs are made without a gateway. Refused: the run
    /// fails with `forbidden`, nothing of it runs.
    async fn access(&self, model: &ModelEntry) -> Result<(), Flow> {
        if !model.config.is_restricted() && !self.agent.is_restricted() {
            return Ok(());
        }
        let user = match self.inner.deps.store.get_user(&self.run.user_id).await {
            Ok(u) => u,
            Err(e) => {
                tracing::error!(error = %e, "loading the run's user failed; leaving the run to the reaper");
                return Err(Flow::Leave(Leave::Abandon));
            }
        };
        let who = weft_config::Requester {
            username: &user.username,
            admin: user.role == weft_store::Role::Admin,
        };
        let refused = if !model.config.allows_user(who) {
            format!(
                "the model {:?} is not open to you any more; choose another",
                model.config.id
            )
        } else if !self.agent.allows_user(who) {
            format!(
                "the agent {:?} is not open to you any more; choose another",
                self.agent.id
            )
        } else {
            return Ok(());
        };
        Err(Flow::End(RunEnd::Failed {
            error: ErrorBody {
                code: "forbidden".into(),
                message: refused,
            },
            partial: String::new(),
            step: self.step,
        }))
    }

    /// One agent step: the model's answer, then its tool calls.
    async fn step(&mut self, model: &ModelEntry) -> Flow {
        let max_steps = self.agent.max_steps.unwrap_or(self.cfg.worker.max_steps);
        if self.step > max_steps {
            return Flow::End(RunEnd::Failed {
                error: ErrorBody {
                    code: "max_steps".into(),
                    message: format!("the agent did not finish within {max_steps} steps"),
                },
                partial: String::new(),
                step: self.step,
            });
        }
        let req = ChatRequest {
            model: model.wire_name(),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            max_tokens: model.config.max_tokens,
            thinking_budget: model.config.thinking_budget,
            attempt: 1,
        };
        let step = self.step;
        let outcome =
            step::run_step(model, req, step, &mut self.em, &self.stop, &mut self.timing).await;
        let (said, calls) = match outcome {
            StepOutcome::Stopped { partial } => return self.stopped(partial),
            StepOutcome::Failed { error, partial } => {
                return Flow::End(RunEnd::Failed {
                    error,
                    partial,
                    step,
                });
            }
            StepOutcome::Done { said, calls, usage } => {
                self.usage.add(usage);
                self.em
                    .emit(EventKind::Usage(finish::usage_dto(
                        self.usage,
                        self.context,
                    )))
                    .await;
                (said, calls)
            }
        };
        // Planning ends with a plan proposed, called for or not.
        let calls = match plan::calls_of_step(self.run.planning, step, &said, calls) {
            Some(calls) => calls,
            None => {
                return Flow::End(RunEnd::Succeeded {
                    content: said.text,
                    step,
                    citations: Vec::new(),
                    reasoning: said.reasoning,
                });
            }
        };
        let runner = match self.runner(self.run.planning).await {
            Ok(r) => r,
            Err(flow) => return flow,
        };
        let mut disposed = runner.dispose_step(calls, |_| None);
        plan::one_plan_with_text(&said, &mut disposed);
        let delegations = delegate::prepare(self, &mut disposed).await;
        if disposed.iter().any(|(_, d)| {
            matches!(
                d,
                Disposition::Confirm | Disposition::Ask | Disposition::Plan | Disposition::Delegate
            )
        }) {
            return wait::suspend(self, said, disposed, delegations).await;
        }
        self.run_tools(&runner, said, disposed).await
    }

    /// The tool runner for this run, with the session's `always` grants;
    /// `planning`: for a step made in plan mode (only read-only tools run).
    async fn runner(&self, planning: bool) -> Result<ToolRunner<'a>, Flow> {
        // A scheduled run is unattended: "always allow" was said to a person
        // watching, so its `confirm` tools wait for the owner's decision.
        let grants: HashSet<String> = if self.run.schedule_id.is_some() {
            HashSet::new()
        } else {
            self.session_grants().await?
        };
        Ok(ToolRunner::new(
            self.inner,
            self.tool_context(),
            grants,
            self.agent.clone(),
            self.cfg.clone(),
            !self.run.session_knowledge.is_empty(),
            self.tools.clone(),
        )
        .while_planning(planning)
        .at_depth(self.run.depth))
    }

    /// The session's `always` grants (a failure leaves the run to the reaper).
    async fn session_grants(&self) -> Result<HashSet<String>, Flow> {
        Ok(
            match self
                .inner
                .deps
                .store
                .session_tool_grants(&self.run.session_id)
                .await
            {
                Ok(g) => g.into_iter().collect(),
                Err(e) => {
                    tracing::error!(error = %e, "loading tool grants failed; leaving the run to the reaper");
                    return Err(Flow::Leave(Leave::Abandon));
                }
            },
        )
    }

    /// Run a step's disposed calls, checkpoint the step, extend the context.
    async fn run_tools(
        &mut self,
        runner: &ToolRunner<'_>,
        said: Said,
        calls: Vec<(ToolCall, Disposition)>,
    ) -> Flow {
        let step = self.step;
        let Some(results) = runner.run(&calls, step, &mut self.em, &self.stop).await else {
            return self.stopped(said.text);
        };
        let calls: Vec<ToolCall> = calls.into_iter().map(|(c, _)| c).collect();
        match self.checkpoint(&said, &calls, &results).await {
            Flow::Next => {}
            other => return other,
        }
        let messages = Arc::make_mut(&mut self.messages);
        messages.push(ChatMessage::Assistant {
            content: said.text,
            tool_calls: calls,
            reasoning: said.reasoning,
        });
        messages.extend(results.into_iter().map(|r| ChatMessage::Tool {
            call_id: r.call_id,
            name: r.name,
            content: r.content,
        }));
        Flow::Next
    }

    async fn checkpoint(
        &mut self,
        said: &Said,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Flow {
        let cp = StepCheckpoint {
            step: self.step,
            content: said.text.clone(),
            tool_calls: calls.iter().map(call_dto).collect(),
            reasoning: said.reasoning.clone(),
            results: results.to_vec(),
        };
        match self
            .inner
            .deps
            .store
            .checkpoint_step(
                &self.run.id,
                &self.inner.id,
                &self.run.session_id,
                &cp,
                self.em.seq(),
            )
            .await
        {
            Ok(true) => {
                self.inner
                    .failure_point(crate::failure::FailurePoint::AfterCheckpoint)
                    .await;
                Flow::Next
            }
            // Ownership lost: the new owner carries on.
            Ok(false) => Flow::Leave(Leave::Abandon),
            Err(e) => {
                tracing::error!(error = %e, "checkpoint failed; leaving the run to the reaper");
                Flow::Leave(Leave::Abandon)
            }
        }
    }

    /// The one place a stop request becomes a flow.
    fn stopped(&self, partial: String) -> Flow {
        let step = self.step;
        match self.stop.reason() {
            StopReason::Cancel => Flow::End(RunEnd::Cancelled { partial, step }),
            StopReason::Lost => Flow::Leave(Leave::Abandon),
            StopReason::Shutdown => Flow::Leave(Leave::Release),
            StopReason::TimeLimit => Flow::End(RunEnd::Failed {
                error: ErrorBody {
                    code: "max_duration".into(),
                    message: format!(
                        "the run passed its time limit of {} s and was stopped",
                        self.cfg.worker.max_run_secs
                    ),
                },
                partial,
                step,
            }),
        }
    }

    async fn conclude(mut self, flow: Flow) -> Execution {
        match flow {
            Flow::End(mut end) => {
                if let RunEnd::Succeeded {
                    content, citations, ..
                } = &mut end
                {
                    *citations =
                        citations::resolve(&self.inner.deps.store, &self.sources, content).await;
                }
                let totals = finish::Totals {
                    usage: self.usage,
                    context: self.context,
                    ttft_ms: self.timing.ttft_ms,
                    started: self.started,
                };
                finish::finish(self.inner, &self.run, &mut self.em, end, &totals).await
            }
            Flow::Leave(Leave::Waiting) => Execution::Waiting,
            Flow::Leave(Leave::Release) => {
                release(self.inner, &self.run.id).await;
                Execution::Abandoned
            }
            Flow::Leave(Leave::Abandon) | Flow::Next => Execution::Abandoned,
        }
    }
}

/// One agent step: its LLM calls and tool calls are the step span's children.
fn step_span(step: u32) -> tracing::Span {
    tracing::info_span!("step", step)
}

fn call_dto(c: &ToolCall) -> ToolCallDto {
    ToolCallDto {
        id: c.id.clone(),
        name: c.name.clone(),
        args: c.args.clone(),
    }
}
