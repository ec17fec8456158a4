// The reducer's plan rules (plan mode), against event sequences shaped like the
// ones the worker publishes: a planning step streams its text (the plan), then
// `plan_proposed`, and the run waits (`waiting_input`); the resuming worker sends
// `run_started` (its `resume_step` the step after the planning one),
// `plan_decided`, then the `propose_plan` call as tool_start/tool_end and the next
// step — a new plan after a revise, the work after an approval; a reject or an
// expiry ends the run with the plan as its reply.

import { describe, expect, it } from 'vitest'
import type { Plan, RunEvent } from '../types'
import { applyEvent, initialRunState, planView, reduceRun, replyText, type RunState } from './reducer'

const RUN = 'run-p'

function script() {
  let seq = 0
  const out: RunEvent[] = []
  const push = (body: Record<string, unknown>) => {
    seq += 1
    out.push({ run_id: RUN, seq, ts: 1_000 + seq, ...body } as RunEvent)
  }
  return {
    events: out,
    started: (attempt: number, resume_step: number) =>
      push({ type: 'run_started', session_id: 's', model: 'mock', attempt, resume_step }),
    text: (step: number, delta: string) => push({ type: 'text', step, delta }),
    proposed: (step: number, plan_id: string, markdown: string) =>
      push({ type: 'plan_proposed', step, plan_id, call_id: `plan_${step}`, markdown, expires_at: 1_800_000 }),
    decided: (step: number, plan_id: string, status: string, comment: string | null, by: string | null) =>
      push({ type: 'plan_decided', step, plan_id, call_id: `plan_${step}`, status, comment, by }),
    toolStart: (step: number, call_id: string, name = 'propose_plan') =>
      push({ type: 'tool_start', step, call_id, name, args: {} }),
    toolEnd: (step: number, call_id: string, output: string, name = 'propose_plan') =>
      push({ type: 'tool_end', step, call_id, name, ok: true, output, duration_ms: 0 }),
    retrying: (step: number) => push({ type: 'retrying', step, attempt: 1, reason: 'upstream 503', delay_ms: 10 }),
    done: () =>
      push({
        type: 'done',
        message_id: 'm',
        model: 'mock',
        usage: { input: 1, output: 1, cache_read: 0, reasoning: 0 },
        duration_ms: 10,
      }),
  }
}

const fold = (events: RunEvent[], from: RunState = initialRunState(RUN)) => events.reduce(applyEvent, from)
const PLAN_A = '1. Read the code.\n2. Fix the bug.'
const PLAN_B = '1. Read the code.\n2. Fix the bug.\n3. Test it.'

/** Step 1 writes plan A and proposes it (p1); the run waits. */
function proposingRun() {
  const s = script()
  s.started(1, 1)
  s.text(1, PLAN_A)
  s.proposed(1, 'p1', PLAN_A)
  return s
}

const stored = (over: Partial<Plan> = {}): Plan => ({
  id: 'p1',
  run_id: RUN,
  session_id: 's',
  step: 1,
  markdown: PLAN_A,
  status: 'proposed',
  created_at: '2026-01-01T00:00:00Z',
  expires_at: '2026-01-01T00:30:00Z',
  ...over,
})

describe('plans in the run reducer', () => {
  it('a proposed plan makes the run wait for a decision, with the plan, its call and its expiry', () => {
    const st = fold(proposingRun().events)
    expect(st.phase).toBe('waiting_input')
    expect(st.plans).toEqual([{ planId: 'p1', callId: 'plan_1', step: 1, markdown: PLAN_A, expiresAt: 1_800_000 }])
    // No tool call yet: `propose_plan` is answered once decided.
    expect(st.tools).toEqual({})
    expect(replyText(st)).toBe(PLAN_A)
  })

  it('a revise keeps the first plan, marked revised with the comment and who asked, and the second follows', () => {
    const s = proposingRun()
    s.started(1, 2)
    s.decided(1, 'p1', 'revised', 'Test it too.', 'alice')
    s.toolStart(1, 'plan_1')
    s.toolEnd(1, 'plan_1', 'The user (alice) asked for changes to the plan: Test it too.')
    s.text(2, PLAN_B)
    s.proposed(2, 'p2', PLAN_B)
    const st = fold(s.events)
    expect(st.phase).toBe('waiting_input')
    expect(st.plans.map((p) => [p.planId, p.step, p.decided ?? null])).toEqual([
      ['p1', 1, { status: 'revised', comment: 'Test it too.', by: 'alice' }],
      ['p2', 2, null],
    ])
    expect(st.tools.plan_1?.status).toBe('ok')
  })

  it('an approval lets the run go on: running with the call answered, then done with both plans kept', () => {
    const s = proposingRun()
    s.started(1, 2)
    s.decided(1, 'p1', 'approved', null, 'alice')
    const waiting = fold(s.events)
    // The decision told, nothing waits any more.
    expect(waiting.phase).toBe('running')
    s.toolStart(1, 'plan_1')
    s.toolEnd(1, 'plan_1', 'The user (alice) approved the plan.')
    s.text(2, 'Done: fixed.')
    s.done()
    const st = fold(s.events)
    expect(st.phase).toBe('done')
    expect(st.plans).toHaveLength(1)
    expect(st.plans[0].decided).toEqual({ status: 'approved', comment: null, by: 'alice' })
    expect(replyText(st)).toBe(`${PLAN_A}\n\nDone: fixed.`)
  })

  it('a reject or an expiry ends the run with the plan as its reply', () => {
    for (const [status, by] of [
      ['rejected', 'bob'],
      ['expired', null],
    ] as const) {
      const s = proposingRun()
      s.started(1, 2)
      s.decided(1, 'p1', status, null, by)
      s.done()
      const st = fold(s.events)
      expect(st.phase).toBe('done')
      expect(st.plans[0].decided).toEqual({ status, comment: null, by })
      expect(replyText(st)).toBe(PLAN_A)
    }
  })

  it('a retried step forgets the plan it proposed', () => {
    const s = proposingRun()
    s.retrying(1)
    const st = fold(s.events)
    expect(st.plans).toEqual([])
    expect(st.phase).toBe('retrying')
  })

  it('a later attempt resuming at or before the plan\'s step voids it; one resuming after keeps it', () => {
    const again = proposingRun()
    again.started(2, 1)
    again.text(1, 'Plan B')
    const st = fold(again.events)
    expect(st.plans).toEqual([])
    expect(replyText(st)).toBe('Plan B')

    const after = proposingRun()
    after.started(1, 2)
    expect(fold(after.events).plans.map((p) => p.planId)).toEqual(['p1'])
  })

  it('a replayed proposal is shown once; a decision for a plan never told changes nothing', () => {
    const s = proposingRun()
    const once = fold(s.events)
    const replay = fold(s.events.map((e, i) => ({ ...e, seq: 10 + i })), once)
    expect(replay.plans).toHaveLength(1)

    const lost = script()
    lost.started(1, 2)
    lost.decided(1, 'p9', 'approved', null, 'alice')
    const st = fold(lost.events)
    expect(st.plans).toEqual([])
    expect(st.lastSeq).toBe(2)
  })

  it('fills in an open plan the events did not tell, and leaves the ones they did alone', () => {
    // The event log is gone: only run_started came, the list has the plan.
    const s = script()
    s.started(1, 1)
    const bare = fold(s.events)
    const filled = reduceRun(bare, { kind: 'plans', plans: [stored(), stored({ id: 'p0', run_id: 'other' })] })
    expect(filled.phase).toBe('waiting_input')
    expect(filled.plans).toEqual([
      { planId: 'p1', step: 1, markdown: PLAN_A, expiresAt: Date.parse('2026-01-01T00:30:00Z') },
    ])
    expect(filled.steps.map((x) => x.step)).toEqual([1])

    // The events told it already (and it may be decided since): the list is older.
    const told = fold(proposingRun().events)
    expect(reduceRun(told, { kind: 'plans', plans: [stored()] })).toBe(told)
    // A decided plan in the list, or a finished run: nothing to add.
    expect(reduceRun(bare, { kind: 'plans', plans: [stored({ status: 'approved' })] })).toBe(bare)
    const s2 = script()
    s2.started(1, 1)
    s2.done()
    const ended = fold(s2.events)
    expect(reduceRun(ended, { kind: 'plans', plans: [stored()] })).toBe(ended)
  })

  it('reads a stored plan as its card shows it', () => {
    expect(planView(stored({ status: 'revised', comment: 'Add tests.', decided_by: 'alice' }))).toEqual({
      planId: 'p1',
      step: 1,
      markdown: PLAN_A,
      expiresAt: Date.parse('2026-01-01T00:30:00Z'),
      decided: { status: 'revised', comment: 'Add tests.', by: 'alice' },
    })
    expect(planView(stored({ expires_at: 'not a time' })).expiresAt).toBeUndefined()
    expect(planView(stored()).decided).toBeUndefined()
  })
})
