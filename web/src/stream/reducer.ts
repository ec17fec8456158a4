// The state of one run as seen through its event stream.
//
// Every rule about how run events combine lives here for the web UI, so that a
// reply can neither vanish nor duplicate however the stream is cut, replayed or
// re-attached. They are the protocol's one fold (docs/protocol.md, "Folding events
// into a reply"; weft_wire::fold in Rust), and one table of cases
// (wire/tests/fold_cases.json, fold_cases.test.ts here) is run against both:
//   * seq dedupe — an event with seq ≤ the last applied one is ignored, so replay
//     after a re-attach (Last-Event-ID / ?after=N, or a full replay from 0) is safe;
//   * every `run_started` after the first drops what was shown for steps
//     ≥ resume_step — those steps run again. Not the attempt number: a run that
//     waited for approval starts counting attempts again, and its resume's
//     `resume_step` is the step after the waiting one, so that step's text stays;
//   * approvals: `approval_required` makes a tool card wait (with its expiry),
//     `approval_decided` records the decision and who made it; the pending
//     approvals read over HTTP (`approvals` action) fill in what a lost event log
//     no longer replays, without undoing a decision the events already told;
//   * questions (`ask_user`): `question` makes the run wait for a person's input
//     (phase `waiting_input`), `question_answered` records the answer (or that it
//     expired) and who gave it; like approvals, they are void from `resume_step`
//     on and with their step's `retrying`. The session's open questions read over
//     HTTP (`questions` action) fill in what a lost event log no longer replays;
//   * plans (plan mode): `plan_proposed` makes the run wait for a decision (phase
//     `waiting_input`), `plan_decided` records it (approved, rejected, revised with
//     a comment, or expired) and who made it; a revised plan stays, the new plan
//     follows at a later step. Void like questions: from `resume_step` on, and with
//     their step's `retrying`. The session's open plans read over HTTP (`plans`
//     action) fill in what a lost event log no longer replays;
//   * delegations (`delegate`): `agent_start` hands a task to another agent, a
//     run of its own (the child's run id, to attach to) — a newer telling of the
//     same delegation replaces it — and the run waits for its children (phase
//     `waiting_agents`); `agent_end` records how the child ended. Void like plans:
//     from `resume_step` on, and with their step's `retrying`;
//   * `retrying` restarts one step: what that step streamed so far (and the
//     questions, plans and delegations it asked for) is discarded;
//   * `citations` (sent just before `done`) sets the sources the answer cites as
//     `[n]`, whole: a later one replaces the list, never adds to it (the reply text
//     keeps its `[n]`; drawing them as footnotes is the view's business);
//   * a `heartbeat` whose `idle_ms` reaches STILL_WORKING_AFTER_MS (the run has
//     said nothing else for three minutes: a slow tool, a model thinking out of
//     sight) sets `stillWorkingMs` to its `elapsed_ms` ("still working… 3 min");
//     any other event clears it;
//   * terminal events (`done`, `error`, `cancelled`) freeze the run; partial text
//     stays.
// Connection state ("reconnecting…") is kept here too, as local actions.
//
// The reducer is pure and returns a new object whenever something changed (and the
// same object when nothing did), so React can use it directly.

import type {
  Approval,
  Citation,
  Delegation,
  DelegationStatus,
  ErrorBody,
  MemoryRef,
  Plan,
  PlanStatus,
  Question,
  QuestionStatus,
  RunEvent,
  TodoItem,
  Usage,
} from '../types'

/** A run that said nothing but heartbeats this long shows as still working (weft_wire::fold). */
export const STILL_WORKING_AFTER_MS = 180_000

export type Phase =
  | 'connecting'
  | 'running'
  | 'retrying'
  | 'waiting_approval'
  | 'waiting_input'
  | 'waiting_agents'
  | 'done'
  | 'error'
  | 'cancelled'

export interface ToolView {
  callId: string
  step: number
  name: string
  args: unknown
  status: 'running' | 'ok' | 'failed' | 'awaiting_approval'
  output?: string
  durationMs?: number
  approvalId?: string
  /** unix ms: unanswered by then, the call counts as denied */
  expiresAt?: number
  /** what a person (or the clock) decided, once `approval_decided` told */
  decision?: ApprovalOutcome
}

export interface ApprovalOutcome {
  /** `approved`, `denied` or `expired` */
  decision: string
  /** the username that decided; none when it expired */
  by: string | null
}

/** A question the agent asked the person (`question`), and its answer once told. */
export interface QuestionView {
  questionId: string
  callId: string
  step: number
  question: string
  /** choices offered; empty for a free answer */
  options: string[]
  /** several options may be chosen */
  multiple: boolean
  /** a typed answer is accepted besides the options */
  allowText: boolean
  /** unix ms: unanswered by then, the agent is told nobody answered */
  expiresAt?: number
  /** once `question_answered` told: `answered` (with the answer and who) or `expired` */
  answered?: QuestionOutcome
}

export interface QuestionOutcome {
  status: QuestionStatus
  /** the chosen options, or the one typed answer; empty when it expired */
  answer: string[]
  /** the username that answered */
  by: string | null
}

/** A plan the agent proposed in plan mode (`plan_proposed`), and its decision once told. */
export interface PlanView {
  planId: string
  /** the `propose_plan` call it stands for; unknown for a plan read over HTTP */
  callId?: string
  step: number
  /** the plan, as the agent wrote it (the step's text) */
  markdown: string
  /** unix ms: undecided by then, the plan expires and the run ends with it */
  expiresAt?: number
  /** once `plan_decided` told */
  decided?: PlanOutcome
}

export interface PlanOutcome {
  /** `approved`, `rejected`, `revised` or `expired` */
  status: PlanStatus
  /** what the person said with a revise (or a reject) */
  comment: string | null
  /** the username that decided; none when it expired */
  by: string | null
}

/** A task the agent handed to another agent (`agent_start`), and how it ended once `agent_end` told. */
export interface DelegationView {
  delegationId: string
  /** the `delegate` call it stands for */
  callId: string
  step: number
  /** the agent's id */
  agent: string
  task: string
  /** the child's session and run: attach to the run's events to watch it */
  sessionId: string
  runId: string
  /** `running` until its `agent_end` */
  status: DelegationStatus
}

export interface StepView {
  step: number
  thinking: string
  /** ts of the step's first thinking delta */
  thinkingFromTs?: number
  /** how long it thought: from its first thinking delta to its first text or tool call */
  thinkingMs?: number
  text: string
  /** call ids in the order the tools started */
  tools: string[]
}

export interface RetryInfo {
  step: number
  attempt: number
  reason: string
  delayMs: number
}

export interface RunState {
  runId: string
  lastSeq: number
  attempt: number
  model?: string
  phase: Phase
  /** sorted by step number */
  steps: StepView[]
  tools: Record<string, ToolView>
  /** the questions asked, in the order asked (each carries its step) */
  questions: QuestionView[]
  /** the plans proposed, in the order proposed (each carries its step) */
  plans: PlanView[]
  /** the tasks handed to other agents, in the order handed (each carries its step) */
  delegations: DelegationView[]
  usage?: Usage
  /** the sources the answer cites as `[n]`, once the `citations` event told */
  citations?: Citation[]
  /** the person's memories the prompt carried (`memory_used`; a new attempt tells again) */
  memories?: MemoryRef[]
  /** the session's todo list as this run last changed it (`todo`) */
  todos?: TodoItem[]
  /** the version of `todos`: a `todo` event with a lower one is older */
  todosVersion?: number
  retry?: RetryInfo
  error?: ErrorBody
  cancelledBy?: string
  messageId?: string
  ttftMs?: number
  durationMs?: number
  /** ts of run_started and of the first text/thinking delta, for a live TTFT */
  startedTs?: number
  firstTokenTs?: number
  /** the connection dropped and we are re-attaching */
  reconnecting: boolean
  /** while the run has said nothing but heartbeats for three minutes: how long it has been going (ms) */
  stillWorkingMs?: number
}

export type RunAction =
  | { kind: 'event'; event: RunEvent }
  | { kind: 'connection'; state: 'open' | 'lost' }
  /** the session's pending approvals, as `GET /v1/sessions/{id}/approvals` lists them */
  | { kind: 'approvals'; approvals: Approval[] }
  /** the session's open questions, as `GET /v1/sessions/{id}/questions` lists them */
  | { kind: 'questions'; questions: Question[] }
  /** the session's open plans, as `GET /v1/sessions/{id}/plans` lists them */
  | { kind: 'plans'; plans: Plan[] }

export function initialRunState(runId: string): RunState {
  return {
    runId,
    lastSeq: 0,
    attempt: 0,
    phase: 'connecting',
    steps: [],
    tools: {},
    questions: [],
    plans: [],
    delegations: [],
    reconnecting: false,
  }
}

export function isTerminal(state: RunState): boolean {
  return state.phase === 'done' || state.phase === 'error' || state.phase === 'cancelled'
}

/** The reply text as the user reads it: the text of every step, in order. */
export function replyText(state: RunState): string {
  return state.steps
    .map((s) => s.text)
    .filter((t) => t.length > 0)
    .join('\n\n')
}

export function reduceRun(state: RunState, action: RunAction): RunState {
  if (action.kind === 'connection') {
    const reconnecting = action.state === 'lost' && !isTerminal(state)
    return reconnecting === state.reconnecting ? state : { ...state, reconnecting }
  }
  if (action.kind === 'approvals') return applyPendingApprovals(state, action.approvals)
  if (action.kind === 'questions') return applyOpenQuestions(state, action.questions)
  if (action.kind === 'plans') return applyOpenPlans(state, action.plans)
  return applyEvent(state, action.event)
}

/**
 * Adds the run's pending approvals that the events did not show (its event log
 * was lost, e.g. an embedded server restarted while the run waited). A call the
 * events already decided, ran or finished is left alone: the list may be older
 * than the events.
 */
export function applyPendingApprovals(state: RunState, approvals: readonly Approval[]): RunState {
  if (isTerminal(state)) return state
  let s: RunState | null = null
  for (const ap of approvals) {
    if (ap.run_id !== state.runId || ap.status !== 'pending') continue
    if (state.tools[ap.call_id]) continue
    s ??= { ...state }
    const step = ensureStep(s, ap.step)
    if (!step.tools.includes(ap.call_id)) step.tools = [...step.tools, ap.call_id]
    const expiresAt = Date.parse(ap.expires_at)
    s.tools = {
      ...s.tools,
      [ap.call_id]: {
        callId: ap.call_id,
        step: ap.step,
        name: ap.name,
        args: ap.args,
        status: 'awaiting_approval',
        approvalId: ap.id,
        expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt,
      },
    }
    s.phase = 'waiting_approval'
  }
  return s ?? state
}

/** The step stopped thinking at `ts` (its first text or tool call), if it thought. */
function doneThinking(step: StepView, ts: number) {
  if (step.thinkingFromTs !== undefined && step.thinkingMs === undefined) {
    step.thinkingMs = Math.max(0, ts - step.thinkingFromTs)
  }
}

/** A stored question as its card shows it: one the events did not tell, or a finished reply's after a reload. */
export function questionView(q: Question): QuestionView {
  const expiresAt = Date.parse(q.expires_at)
  return {
    questionId: q.id,
    callId: q.call_id,
    step: q.step,
    question: q.question,
    options: q.options,
    multiple: q.multiple,
    allowText: q.allow_text,
    expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt,
    answered: q.status === 'pending' ? undefined : { status: q.status, answer: q.answer, by: q.answered_by ?? null },
  }
}

/**
 * Adds the run's open questions that the events did not show (a lost event log,
 * as for approvals). A question the events already told is left alone.
 */
export function applyOpenQuestions(state: RunState, questions: readonly Question[]): RunState {
  if (isTerminal(state)) return state
  let s: RunState | null = null
  for (const q of questions) {
    if (q.run_id !== state.runId || q.status !== 'pending') continue
    if (state.questions.some((x) => x.questionId === q.id)) continue
    s ??= { ...state }
    ensureStep(s, q.step)
    s.questions = [...s.questions, questionView(q)]
    s.phase = 'waiting_input'
  }
  return s ?? state
}

/** A stored plan as its card shows it: one the events did not tell, or a finished reply's after a reload. */
export function planView(p: Plan): PlanView {
  const expiresAt = Date.parse(p.expires_at)
  return {
    planId: p.id,
    step: p.step,
    markdown: p.markdown,
    expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt,
    decided:
      p.status === 'proposed' ? undefined : { status: p.status, comment: p.comment ?? null, by: p.decided_by ?? null },
  }
}

/** A stored delegation as its card shows it: a finished reply's, after a reload. */
export function delegationView(d: Delegation): DelegationView {
  return {
    delegationId: d.id,
    callId: d.call_id,
    step: d.step,
    agent: d.agent,
    task: d.task,
    sessionId: d.child_session_id,
    runId: d.child_run_id,
    status: d.status,
  }
}

/**
 * Adds the run's open plans that the events did not show (a lost event log, as
 * for questions). A plan the events already told is left alone.
 */
export function applyOpenPlans(state: RunState, plans: readonly Plan[]): RunState {
  if (isTerminal(state)) return state
  let s: RunState | null = null
  for (const p of plans) {
    if (p.run_id !== state.runId || p.status !== 'proposed') continue
    if (state.plans.some((x) => x.planId === p.id)) continue
    s ??= { ...state }
    ensureStep(s, p.step)
    s.plans = [...s.plans, planView(p)]
    s.phase = 'waiting_input'
  }
  return s ?? state
}

/** Where a run that is not streaming stands: waiting for a person, for other agents, or running. */
function waitingPhase(s: RunState): Phase {
  if (Object.values(s.tools).some((t) => t.status === 'awaiting_approval')) return 'waiting_approval'
  if (s.questions.some((q) => !q.answered)) return 'waiting_input'
  if (s.plans.some((p) => !p.decided)) return 'waiting_input'
  if (s.delegations.some((d) => d.status === 'running')) return 'waiting_agents'
  return 'running'
}

export function applyEvent(state: RunState, ev: RunEvent): RunState {
  if (ev.run_id !== state.runId) return state
  if (typeof ev.seq !== 'number' || ev.seq <= state.lastSeq) return state
  // Once terminal, nothing else belongs to this run.
  if (isTerminal(state)) return state

  const s: RunState = { ...state, lastSeq: ev.seq, reconnecting: false, stillWorkingMs: undefined }

  switch (ev.type) {
    case 'run_started': {
      if (state.attempt > 0) dropStepsFrom(s, ev.resume_step)
      s.attempt = Math.max(state.attempt, ev.attempt)
      s.model = ev.model
      s.phase = 'running'
      s.retry = undefined
      s.startedTs ??= ev.ts
      return s
    }
    case 'text':
    case 'thinking': {
      const step = ensureStep(s, ev.step)
      if (ev.type === 'text') {
        step.text += ev.delta
        doneThinking(step, ev.ts)
      } else {
        step.thinking += ev.delta
        step.thinkingFromTs ??= ev.ts
      }
      s.phase = 'running'
      s.retry = undefined
      s.firstTokenTs ??= ev.ts
      return s
    }
    case 'tool_start': {
      const step = ensureStep(s, ev.step)
      doneThinking(step, ev.ts)
      if (!step.tools.includes(ev.call_id)) step.tools = [...step.tools, ev.call_id]
      const prev = s.tools[ev.call_id]
      s.tools = {
        ...s.tools,
        [ev.call_id]: {
          callId: ev.call_id,
          step: ev.step,
          name: ev.name,
          args: ev.args,
          status: 'running',
          decision: prev?.decision,
          approvalId: prev?.approvalId,
        },
      }
      s.phase = 'running'
      return s
    }
    case 'approval_required': {
      const step = ensureStep(s, ev.step)
      if (!step.tools.includes(ev.call_id)) step.tools = [...step.tools, ev.call_id]
      const prev = s.tools[ev.call_id]
      s.tools = {
        ...s.tools,
        [ev.call_id]: {
          ...(prev ?? { callId: ev.call_id, step: ev.step, name: ev.name, args: ev.args }),
          status: 'awaiting_approval',
          approvalId: ev.approval_id,
          expiresAt: ev.expires_at,
          decision: undefined,
        },
      }
      s.phase = 'waiting_approval'
      return s
    }
    case 'approval_decided': {
      const step = ensureStep(s, ev.step)
      if (!step.tools.includes(ev.call_id)) step.tools = [...step.tools, ev.call_id]
      const prev = s.tools[ev.call_id]
      const approved = ev.decision === 'approved'
      s.tools = {
        ...s.tools,
        [ev.call_id]: {
          ...(prev ?? { callId: ev.call_id, step: ev.step, name: ev.name, args: undefined }),
          approvalId: ev.approval_id,
          // An approved call runs next; a denied or expired one never does.
          status: approved ? 'running' : 'failed',
          decision: { decision: ev.decision, by: ev.by ?? null },
        },
      }
      s.phase = waitingPhase(s)
      return s
    }
    case 'question': {
      ensureStep(s, ev.step)
      // Asked again (a replayed or re-sent event): the newest telling stands.
      s.questions = [
        ...s.questions.filter((q) => q.questionId !== ev.question_id),
        {
          questionId: ev.question_id,
          callId: ev.call_id,
          step: ev.step,
          question: ev.question,
          options: ev.options,
          multiple: ev.multiple,
          allowText: ev.allow_text,
          expiresAt: ev.expires_at,
        },
      ]
      s.phase = 'waiting_input'
      return s
    }
    case 'question_answered': {
      const i = s.questions.findIndex((q) => q.questionId === ev.question_id)
      if (i < 0) return s
      s.questions = [...s.questions]
      s.questions[i] = { ...s.questions[i], answered: { status: ev.status, answer: ev.answer, by: ev.by ?? null } }
      s.phase = waitingPhase(s)
      return s
    }
    case 'plan_proposed': {
      ensureStep(s, ev.step)
      // Proposed again (a replayed or re-sent event): the newest telling stands.
      s.plans = [
        ...s.plans.filter((p) => p.planId !== ev.plan_id),
        { planId: ev.plan_id, callId: ev.call_id, step: ev.step, markdown: ev.markdown, expiresAt: ev.expires_at },
      ]
      s.phase = 'waiting_input'
      return s
    }
    case 'plan_decided': {
      const i = s.plans.findIndex((p) => p.planId === ev.plan_id)
      if (i < 0) return s
      s.plans = [...s.plans]
      s.plans[i] = { ...s.plans[i], decided: { status: ev.status, comment: ev.comment ?? null, by: ev.by ?? null } }
      s.phase = waitingPhase(s)
      return s
    }
    case 'agent_start': {
      ensureStep(s, ev.step)
      // Told again (a replayed or re-sent event): the newest telling stands.
      s.delegations = [
        ...s.delegations.filter((d) => d.delegationId !== ev.delegation_id),
        {
          delegationId: ev.delegation_id,
          callId: ev.call_id,
          step: ev.step,
          agent: ev.agent,
          task: ev.task,
          sessionId: ev.child_session_id,
          runId: ev.child_run_id,
          status: 'running',
        },
      ]
      s.phase = waitingPhase(s)
      return s
    }
    case 'agent_end': {
      const i = s.delegations.findIndex((d) => d.delegationId === ev.delegation_id)
      if (i < 0) return s
      s.delegations = [...s.delegations]
      s.delegations[i] = { ...s.delegations[i], status: ev.status }
      // The run resumed with this end; children still working make it wait again.
      s.phase = waitingPhase(s)
      return s
    }
    case 'tool_end': {
      const step = ensureStep(s, ev.step)
      if (!step.tools.includes(ev.call_id)) step.tools = [...step.tools, ev.call_id]
      const prev = s.tools[ev.call_id]
      s.tools = {
        ...s.tools,
        [ev.call_id]: {
          callId: ev.call_id,
          step: ev.step,
          name: ev.name,
          args: prev?.args,
          status: ev.ok ? 'ok' : 'failed',
          output: ev.output,
          durationMs: ev.duration_ms,
          decision: prev?.decision,
          approvalId: prev?.approvalId,
        },
      }
      if (s.phase === 'waiting_approval' || s.phase === 'waiting_input' || s.phase === 'waiting_agents') s.phase = 'running'
      return s
    }
    case 'usage': {
      s.usage = {
        input: ev.input,
        output: ev.output,
        cache_read: ev.cache_read,
        reasoning: ev.reasoning,
        context_tokens: ev.context_tokens,
        context_window: ev.context_window,
      }
      return s
    }
    case 'citations': {
      s.citations = ev.items
      return s
    }
    case 'memory_used': {
      s.memories = ev.memories
      return s
    }
    case 'todo': {
      // Calls of one step run at once: an older list arriving after a newer
      // one changes nothing (0: a log written before versions, newest last).
      const version = ev.version ?? 0
      if (version !== 0 && version < (s.todosVersion ?? 0)) return s
      s.todos = ev.items
      s.todosVersion = version
      return s
    }
    case 'retrying': {
      // The step starts over: forget what it streamed so far.
      const i = s.steps.findIndex((x) => x.step === ev.step)
      if (i >= 0) {
        const old = s.steps[i]
        const tools = { ...s.tools }
        for (const id of old.tools) delete tools[id]
        s.tools = tools
        s.steps = [...s.steps]
        s.steps[i] = { step: ev.step, thinking: '', text: '', tools: [] }
      }
      if (s.questions.some((q) => q.step === ev.step)) s.questions = s.questions.filter((q) => q.step !== ev.step)
      if (s.plans.some((p) => p.step === ev.step)) s.plans = s.plans.filter((p) => p.step !== ev.step)
      if (s.delegations.some((d) => d.step === ev.step)) s.delegations = s.delegations.filter((d) => d.step !== ev.step)
      s.retry = { step: ev.step, attempt: ev.attempt, reason: ev.reason, delayMs: ev.delay_ms }
      s.phase = 'retrying'
      return s
    }
    case 'heartbeat': {
      // `idle_ms` is absent from an older worker's heartbeats: never still working.
      if ((ev.idle_ms ?? 0) >= STILL_WORKING_AFTER_MS) s.stillWorkingMs = ev.elapsed_ms
      return s
    }
    case 'done': {
      s.phase = 'done'
      s.messageId = ev.message_id
      s.model = ev.model ?? s.model
      s.usage = ev.usage ?? s.usage
      s.ttftMs = ev.ttft_ms ?? undefined
      s.durationMs = ev.duration_ms
      s.retry = undefined
      return s
    }
    case 'error': {
      s.phase = 'error'
      s.error = { code: ev.code, message: ev.message }
      s.retry = undefined
      return s
    }
    case 'cancelled': {
      s.phase = 'cancelled'
      s.cancelledBy = ev.by
      s.retry = undefined
      return s
    }
    default:
      // An event type this client does not know: remember its seq, change nothing else.
      return s
  }
}

/** Returns the (copied, hence mutable) step, creating it in order if absent. */
function ensureStep(s: RunState, step: number): StepView {
  const i = s.steps.findIndex((x) => x.step === step)
  s.steps = [...s.steps]
  if (i >= 0) {
    const copy = { ...s.steps[i] }
    s.steps[i] = copy
    return copy
  }
  const fresh: StepView = { step, thinking: '', text: '', tools: [] }
  s.steps.push(fresh)
  s.steps.sort((a, b) => a.step - b.step)
  return fresh
}

function dropStepsFrom(s: RunState, resumeStep: number): void {
  if (s.questions.some((q) => q.step >= resumeStep)) s.questions = s.questions.filter((q) => q.step < resumeStep)
  if (s.plans.some((p) => p.step >= resumeStep)) s.plans = s.plans.filter((p) => p.step < resumeStep)
  if (s.delegations.some((d) => d.step >= resumeStep)) {
    s.delegations = s.delegations.filter((d) => d.step < resumeStep)
  }
  const kept = s.steps.filter((x) => x.step < resumeStep)
  if (kept.length === s.steps.length) return
  s.steps = kept
  const tools: Record<string, ToolView> = {}
  for (const [id, t] of Object.entries(s.tools)) if (t.step < resumeStep) tools[id] = t
  s.tools = tools
}
