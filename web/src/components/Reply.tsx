// An assistant reply, either live (rendered from the run's events through the
// reducer) or from history (rendered from persisted messages, with the run's
// totals fetched once). Either way the sources it cites (the `citations` event, or
// `citations` on the stored reply) turn its `[n]` into footnotes and list under it,
// and a plan (plan mode) shows as its step's plan card, in place of the step's text
// and its `propose_plan` call. A task handed to another agent (`delegate`) shows as
// a folded delegation card in place of its call, the child run inside it once
// opened (`ChildRun`: the same steps, from the child's own events); from history,
// the run's stored delegations are matched to its calls by call id.

import { useEffect, useMemo, useRef, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { replyCitations } from '../citations'
import { callsDelegate, delegationsByCall, standsInForCall as delegationStandsIn } from '../delegations'
import { contextUse, estimateTokens, fmtMinutes, fmtMs, fmtNum, fmtTokensShort } from '../format'
import { useT } from '../i18n'
import { standsInForCall, textIsPlan } from '../plans'
import {
  isTerminal,
  planView,
  questionView,
  type DelegationView,
  type Phase,
  type PlanView,
  type QuestionView,
  type StepView,
  type ToolView,
} from '../stream/reducer'
import { useRun } from '../stream/useRun'
import type { Citation, ErrorBody, MemoryRef, Message, Run, RunStatus, TodoItem, Usage } from '../types'
import { DelegationCard } from './DelegationCard'
import { Markdown } from './Markdown'
import { PlanCard } from './PlanCard'
import { QuestionCard } from './QuestionCard'
import { Cited } from './Sources'
import { ToolCard } from './ToolCard'
import { Icon } from './Icon'

/** The built-in tool whose calls are questions to the person. */
const ASK_USER = 'ask_user'

export interface LiveReplyProps {
  runId: string
  /** the run's session, to read its pending approvals */
  sessionId?: string
  /** the agent's name, when known */
  agent?: string
  /** an agent's display name by its id (a delegation names the agent by id) */
  nameOf?: (agentId: string) => string | undefined
  onPhase: (runId: string, phase: Phase) => void
  onGone: (runId: string) => void
  /** the run changed the session's todo list: the whole list */
  onTodos?: (items: TodoItem[]) => void
}

export function LiveReply({ runId, sessionId, agent, nameOf, onPhase, onGone, onTodos }: LiveReplyProps) {
  const t = useT()
  const run = useRun(runId, () => onGone(runId), sessionId)
  useEffect(() => {
    if (run.todos) onTodos?.(run.todos)
  }, [run.todos, onTodos])
  const phaseRef = useRef<Phase | null>(null)
  useEffect(() => {
    if (phaseRef.current !== run.phase) {
      phaseRef.current = run.phase
      onPhase(runId, run.phase)
    }
  }, [run.phase, runId, onPhase])

  const terminal = isTerminal(run)
  const hasContent =
    run.questions.length > 0 ||
    run.plans.length > 0 ||
    run.delegations.length > 0 ||
    run.steps.some((s) => s.text || s.thinking || s.tools.length)
  return (
    <article
      className={`msg assistant ${terminal ? '' : 'streaming'}`}
      data-testid="reply"
      data-run-id={runId}
      data-phase={run.phase}
      aria-busy={!terminal}
    >
      {run.attempt > 1 && <span className="badge">{t('chat.attempt', { n: run.attempt })}</span>}
      {run.memories && run.memories.length > 0 && <MemoriesUsed memories={run.memories} />}
      <Cited citations={run.citations}>
        {run.steps.map((s) => (
          <Step
            key={s.step}
            step={s}
            tools={run.tools}
            questions={run.questions}
            plans={run.plans}
            delegations={run.delegations}
            nameOf={nameOf}
            live={!terminal}
            citations={run.citations}
          />
        ))}
      </Cited>
      {!terminal && <StillWorking ms={run.stillWorkingMs} />}
      {!terminal && !hasContent && !run.retry && run.stillWorkingMs === undefined && (
        <p className="muted waiting" role="status">
          <span className="spinner" aria-hidden="true" /> {t('chat.waiting')}
        </p>
      )}
      {run.retry && !terminal && (
        <p className="notice warn" role="status" data-testid="retrying">
          {t('chat.retrying', { step: run.retry.step, attempt: run.retry.attempt, reason: run.retry.reason })}
        </p>
      )}
      {run.reconnecting && (
        <p className="notice" role="status" data-testid="reconnecting">
          <span className="spinner" aria-hidden="true" /> {t('chat.reconnecting')}
        </p>
      )}
      {run.phase === 'error' && run.error && <ErrorBox error={run.error} />}
      {run.phase === 'cancelled' && <Cancelled by={run.cancelledBy} />}
      <Footer
        agent={agent}
        model={run.model}
        usage={run.usage}
        ttftMs={run.ttftMs ?? (run.firstTokenTs && run.startedTs ? run.firstTokenTs - run.startedTs : undefined)}
        durationMs={run.durationMs}
      />
    </article>
  )
}

/**
 * "still working… 3 min" under a reply that has said nothing but heartbeats for
 * three minutes (a slow tool, a model thinking out of sight): it is not hung.
 */
function StillWorking({ ms }: { ms?: number }) {
  const t = useT()
  if (ms === undefined) return null
  return (
    <p className="muted small still-working" role="status" data-testid="still-working">
      <span className="spinner" aria-hidden="true" /> {t('chat.stillWorking', { time: fmtMinutes(ms) })}
    </p>
  )
}

/** "Used 2 memories", opening to the list: what the reply knew of the person. */
function MemoriesUsed({ memories }: { memories: MemoryRef[] }) {
  const t = useT()
  return (
    <details className="memories-used small muted" data-testid="memories-used">
      <summary>{t('chat.memoriesUsed', { n: memories.length })}</summary>
      <ul>
        {memories.map((m) => (
          <li key={m.id} data-kind={m.kind}>
            {m.text}
          </li>
        ))}
      </ul>
      <Link to="/memory" data-testid="memories-manage">
        {t('chat.memoriesManage')}
      </Link>
    </details>
  )
}

function Step(p: {
  step: StepView
  tools: Record<string, ToolView>
  questions: QuestionView[]
  plans: PlanView[]
  delegations: DelegationView[]
  nameOf?: (agentId: string) => string | undefined
  live: boolean
  citations?: Citation[]
}) {
  const { step, tools, live } = p
  // A question stands in for the card of its `ask_user` call: where the call
  // is once it runs, after the step's other calls until then.
  const asked = p.questions.filter((q) => q.step === step.step)
  const byCall = new Map(asked.map((q) => [q.callId, q]))
  // A plan is its step's text: the card shows it where the text was, and stands
  // in for its `propose_plan` call.
  const plans = p.plans.filter((x) => x.step === step.step)
  // A delegation stands in for its `delegate` call. The cards keep one place,
  // after the step's other calls (the call starts only once the children ended),
  // so an open card is not remounted then.
  const delegated = p.delegations.filter((d) => d.step === step.step)
  return (
    <div className="step" data-step={step.step}>
      {step.thinking && <Thinking text={step.thinking} live={live && !step.text} ms={step.thinkingMs} />}
      {step.text && !textIsPlan(step.text, plans) && (
        <div className="md" data-testid="reply-text">
          <Markdown text={step.text} citations={p.citations} />
        </div>
      )}
      {plans.map((x) => (
        <PlanCard key={x.planId} plan={x} live={live} />
      ))}
      {step.tools.map((id) => {
        const q = byCall.get(id)
        if (q) return <QuestionCard key={q.questionId} q={q} live={live} />
        const tool = tools[id]
        if (!tool || standsInForCall(plans, tool) || delegationStandsIn(delegated, id)) return null
        return <ToolCard key={id} tool={tool} />
      })}
      {delegated.map((d) => (
        <DelegationCard
          key={d.delegationId}
          delegation={d}
          name={p.nameOf?.(d.agent) ?? d.agent}
          live={live}
          child={<ChildRun delegation={d} answer={tools[d.callId]?.output} nameOf={p.nameOf} />}
        />
      ))}
      {asked
        .filter((q) => !step.tools.includes(q.callId))
        .map((q) => (
          <QuestionCard key={q.questionId} q={q} live={live} />
        ))}
    </div>
  )
}

/**
 * A delegated run inside its (open) delegation card: its steps as its own events
 * tell them, live while it works. Its events no longer kept, it is the answer its
 * parent's call got, or a pointer to its conversation.
 */
function ChildRun(p: { delegation: DelegationView; answer?: string; nameOf?: (agentId: string) => string | undefined }) {
  const t = useT()
  const [gone, setGone] = useState(false)
  const run = useRun(p.delegation.runId, () => setGone(true), p.delegation.sessionId)
  if (gone) {
    return (
      <div className="delegation-child" data-testid="delegation-child" data-phase="gone">
        {p.answer ? (
          <div className="md" data-testid="delegation-answer">
            <Markdown text={p.answer} />
          </div>
        ) : (
          <p className="muted small">{t('delegation.gone')}</p>
        )}
      </div>
    )
  }
  const terminal = isTerminal(run)
  const said = run.steps.some((s) => s.text || s.thinking || s.tools.length) || run.delegations.length > 0
  return (
    <div
      className={`delegation-child ${terminal ? '' : 'streaming'}`}
      data-testid="delegation-child"
      data-run-id={p.delegation.runId}
      data-phase={run.phase}
      aria-busy={!terminal}
    >
      <Cited citations={run.citations}>
        {run.steps.map((s) => (
          <Step
            key={s.step}
            step={s}
            tools={run.tools}
            questions={run.questions}
            plans={run.plans}
            delegations={run.delegations}
            nameOf={p.nameOf}
            live={!terminal}
            citations={run.citations}
          />
        ))}
      </Cited>
      {!terminal && <StillWorking ms={run.stillWorkingMs} />}
      {!terminal && !said && run.stillWorkingMs === undefined && (
        <p className="muted small waiting" role="status">
          <span className="spinner" aria-hidden="true" /> {t('chat.waiting')}
        </p>
      )}
      {run.phase === 'error' && run.error && <ErrorBox error={run.error} />}
      {run.phase === 'cancelled' && <Cancelled by={run.cancelledBy} />}
    </div>
  )
}

/**
 * The model's reasoning, folded: "Thinking…" while it streams, then "Thought for
 * 4.3 s · 1.2k tokens" (how long until its answer or tool call began); from the
 * stored conversation, where no time was kept, "Thinking · 1.2k tokens".
 */
function Thinking({ text, live, ms }: { text: string; live: boolean; ms?: number }) {
  const t = useT()
  const tokens = fmtTokensShort(estimateTokens(text))
  const head = live
    ? t('chat.thinkingLive')
    : ms !== undefined
      ? t('chat.thoughtFor', { secs: (ms / 1000).toFixed(1) })
      : t('chat.thinking')
  return (
    <details className="thinking" data-testid="thinking">
      <summary>
        {live && <span className="spinner" aria-hidden="true" />} {head}{' '}
        <span className="muted" data-testid="thinking-size">
          · {t('chat.thinkingTokens', { n: tokens })}
        </span>
      </summary>
      <div className="thinking-body">{text}</div>
    </details>
  )
}

function ErrorBox({ error }: { error: ErrorBody }) {
  const t = useT()
  return (
    <div className="notice error" role="alert" data-testid="reply-error">
      <strong>{t('chat.error')}</strong> <code>{error.code}</code> — {error.message}
    </div>
  )
}

function Cancelled({ by }: { by?: string }) {
  const t = useT()
  return (
    <p className="notice muted" data-testid="reply-cancelled">
      <Icon name="stop" size={12} /> {by && by !== 'user' ? t('chat.cancelledBy', { by }) : t('chat.cancelled')}
    </p>
  )
}

function Footer(p: {
  agent?: string
  model?: string
  usage?: Usage | null
  ttftMs?: number | null
  durationMs?: number | null
}) {
  const t = useT()
  const parts: string[] = []
  if (p.agent) parts.push(p.agent)
  if (p.model) parts.push(p.model)
  if (p.ttftMs !== undefined && p.ttftMs !== null) parts.push(t('chat.ttft', { ms: fmtMs(p.ttftMs) }))
  if (p.usage) {
    parts.push(t('chat.tokens', { input: fmtNum(p.usage.input), output: fmtNum(p.usage.output) }))
    if (p.usage.cache_read) parts.push(t('chat.cached', { n: fmtNum(p.usage.cache_read) }))
    if (p.usage.reasoning) parts.push(t('chat.reasoning', { n: fmtNum(p.usage.reasoning) }))
    const ctx = contextUse(p.usage.context_tokens, p.usage.context_window)
    if (ctx) parts.push('pct' in ctx ? t('chat.context', ctx) : t('chat.contextTokens', ctx))
  }
  if (p.durationMs !== undefined && p.durationMs !== null) parts.push(t('chat.duration', { ms: fmtMs(p.durationMs) }))
  if (!parts.length) return null
  return (
    <footer className="reply-foot" data-testid="reply-foot">
      {parts.join(' · ')}
    </footer>
  )
}

// ---- history ---------------------------------------------------------------------

const runCache = new Map<string, Run>()
/** A finished run's plans, once every one is decided (they change no more). */
const planCache = new Map<string, PlanView[]>()
/** A finished run's delegations by their `delegate` call, once every child ended (they change no more). */
const delegationCache = new Map<string, Map<string, DelegationView>>()
/** the live reply's name for each run status, so both read alike; null while the
 *  run is still going. Every status is listed: one the server adds fails tsc here. */
const PHASE_OF_STATUS: Record<RunStatus, Phase | null> = {
  queued: null,
  running: null,
  waiting_approval: null,
  waiting_input: null,
  waiting_agents: null,
  succeeded: 'done',
  failed: 'error',
  cancelled: 'cancelled',
}

export interface HistoricReplyProps {
  runId: string | null
  messages: Message[]
  /** the agent's name, when known */
  agent?: string
  /** an agent's display name by its id (a delegation names the agent by id) */
  nameOf?: (agentId: string) => string | undefined
  /** the run turned out to be still going: attach to it instead */
  onActive: (runId: string) => void
}

export function HistoricReply({ runId, messages, agent, nameOf, onActive }: HistoricReplyProps) {
  const [run, setRun] = useState<Run | undefined>(runId ? runCache.get(runId) : undefined)

  useEffect(() => {
    if (!runId || runCache.has(runId)) return
    let live = true
    api
      .getRun(runId)
      .then((r) => {
        if (!live) return
        if (PHASE_OF_STATUS[r.status]) runCache.set(runId, r)
        else onActive(runId)
        setRun(r)
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [runId, onActive])

  // The questions of its `ask_user` calls, read once: each stands in for its
  // call's tool card, as while the run waited.
  const asks = messages.some((m) => m.tool_calls?.some((c) => c.name === ASK_USER))
  const [asked, setAsked] = useState<Map<string, QuestionView>>(new Map())
  useEffect(() => {
    if (!runId || !asks) return
    let live = true
    api
      .runQuestions(runId)
      .then((qs) => {
        if (live) setAsked(new Map(qs.map((q) => [q.call_id, questionView(q)])))
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [runId, asks])

  // Its plans, read once: each stands in for its step's text and `propose_plan`
  // call, as while the run waited. Only for a plan-mode reply: the history
  // marks its messages (`plan`), since a rejected or expired plan leaves no
  // call to tell one by.
  const planned = messages.some((m) => m.plan)
  const [plans, setPlans] = useState<PlanView[]>(() => (runId ? (planCache.get(runId) ?? []) : []))
  useEffect(() => {
    if (!runId || !planned || planCache.has(runId)) return
    let live = true
    api
      .runPlans(runId)
      .then((ps) => {
        const views = ps.map(planView)
        if (views.every((v) => v.decided)) planCache.set(runId, views)
        if (live) setPlans(views)
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [runId, planned])

  // Its delegations, read once: each stands in for its `delegate` call, as while
  // the run waited for its children. Only for a reply that delegated (a stored
  // `delegate` call is the only place a delegation shows).
  const delegates = useMemo(() => callsDelegate(messages), [messages])
  const [delegated, setDelegated] = useState<Map<string, DelegationView>>(
    () => (runId ? delegationCache.get(runId) : undefined) ?? new Map(),
  )
  useEffect(() => {
    if (!runId || !delegates || delegationCache.has(runId)) return
    let live = true
    api
      .runDelegations(runId)
      .then((ds) => {
        const byCall = delegationsByCall(ds)
        if (ds.every((d) => d.status !== 'running')) delegationCache.set(runId, byCall)
        if (live) setDelegated(byCall)
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [runId, delegates])

  const citations = useMemo(() => replyCitations(messages), [messages])
  const results = new Map<string, Message>()
  for (const m of messages) if (m.role === 'tool' && m.call_id) results.set(m.call_id, m)
  const used = new Set<string>()

  return (
    <article
      className="msg assistant"
      data-testid="reply"
      data-run-id={runId ?? ''}
      data-phase={run ? (PHASE_OF_STATUS[run.status] ?? run.status) : ''}
    >
      <Cited citations={citations}>
        {messages.map((m) => {
          if (m.role === 'assistant') {
            const planned = plans.filter((x) => m.step !== undefined && m.step !== null && x.step === m.step)
            return (
              <div className="step" key={m.id}>
                {m.thinking && <Thinking text={m.thinking} live={false} />}
                {m.content && !textIsPlan(m.content, planned) && (
                  <div className="md" data-testid="reply-text">
                    <Markdown text={m.content} citations={citations} />
                  </div>
                )}
                {planned.map((x) => (
                  <PlanCard key={x.planId} plan={x} live={false} />
                ))}
                {m.tool_calls?.map((c) => {
                  const res = results.get(c.id)
                  if (res) used.add(res.id)
                  const q = asked.get(c.id)
                  if (q) return <QuestionCard key={q.questionId} q={q} live={false} />
                  if (standsInForCall(planned, { callId: c.id, name: c.name })) return null
                  const d = delegated.get(c.id)
                  if (d) {
                    return (
                      <DelegationCard
                        key={d.delegationId}
                        delegation={d}
                        name={nameOf?.(d.agent) ?? d.agent}
                        live={false}
                        child={<ChildRun delegation={d} answer={res?.content} nameOf={nameOf} />}
                      />
                    )
                  }
                  return <ToolCard key={c.id} tool={historicTool(c.id, c.name, c.args, m.step ?? 0, res)} />
                })}
              </div>
            )
          }
          return null
        })}
        {messages
          .filter((m) => m.role === 'tool' && !used.has(m.id))
          .map((m) => (
            <ToolCard key={m.id} tool={historicTool(m.call_id ?? m.id, m.name ?? 'tool', undefined, m.step ?? 0, m)} />
          ))}
      </Cited>
      {run?.status === 'failed' && run.error && <ErrorBox error={run.error} />}
      {run?.status === 'cancelled' && <Cancelled />}
      {run && (
        <Footer agent={agent} model={run.model} usage={run.usage} ttftMs={run.ttft_ms} durationMs={run.duration_ms} />
      )}
    </article>
  )
}

function historicTool(callId: string, name: string, args: unknown, step: number, res?: Message): ToolView {
  return {
    callId,
    step,
    name,
    args,
    status: res ? 'ok' : 'failed',
    output: res?.content,
  }
}
