// The reducer's approval rules (docs/protocol.md, "Run events", "Approvals"),
// against event sequences shaped like the ones the worker publishes: a step that
// calls a `confirm` tool streams its text, announces `approval_required` and
// suspends; the resuming worker sends `run_started` (its `resume_step` the step
// after the waiting one, its attempt counted from 1 again), `approval_decided`,
// then the step's tool calls and the next step.

import { describe, expect, it } from 'vitest'
import type { Approval, RunEvent } from '../types'
import { applyEvent, initialRunState, reduceRun, replyText, type RunState } from './reducer'

const RUN = 'run-a'

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
    required: (step: number, call_id: string, approval_id: string, expires_at = 1_800_000) =>
      push({ type: 'approval_required', step, call_id, approval_id, name: 'current_time', args: {}, expires_at }),
    decided: (step: number, call_id: string, approval_id: string, decision: string, by: string | null) =>
      push({ type: 'approval_decided', step, call_id, approval_id, name: 'current_time', decision, by }),
    toolStart: (step: number, call_id: string) =>
      push({ type: 'tool_start', step, call_id, name: 'current_time', args: {} }),
    toolEnd: (step: number, call_id: string, ok: boolean, output: string) =>
      push({ type: 'tool_end', step, call_id, name: 'current_time', ok, output, duration_ms: 3 }),
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

/** The first stretch of a run: step 1 says something, then waits for c1. */
function waitingRun() {
  const s = script()
  s.started(1, 1)
  s.text(1, 'Let me look at the clock.')
  s.required(1, 'c1', 'ap_1', 1_800_000)
  return s
}

const pending = (over: Partial<Approval> = {}): Approval => ({
  id: 'ap_1',
  run_id: RUN,
  session_id: 's',
  call_id: 'c1',
  name: 'current_time',
  args: { tz: 'UTC' },
  step: 1,
  status: 'pending',
  created_at: '2026-01-01T00:00:00Z',
  expires_at: '2026-01-01T00:30:00Z',
  ...over,
})

describe('approvals in the run reducer', () => {
  it('approval_required leaves the call awaiting, with its approval id and expiry', () => {
    const st = fold(waitingRun().events)
    expect(st.phase).toBe('waiting_approval')
    expect(st.steps[0].tools).toEqual(['c1'])
    expect(st.tools.c1).toMatchObject({
      status: 'awaiting_approval',
      approvalId: 'ap_1',
      expiresAt: 1_800_000,
      name: 'current_time',
    })
    expect(st.tools.c1.decision).toBeUndefined()
  })

  it('an approval carries the resume through: decision, who, the tool run, the reply — and the waiting step keeps its text', () => {
    const s = waitingRun()
    // The resuming worker: attempts count from 1 again; resume_step is the step after the waiting one.
    s.started(1, 2)
    const resumed = fold(s.events)
    expect(replyText(resumed)).toBe('Let me look at the clock.')
    expect(resumed.tools.c1.status).toBe('awaiting_approval')

    s.decided(1, 'c1', 'ap_1', 'approved', 'alice')
    const decided = fold(s.events)
    expect(decided.phase).toBe('running')
    expect(decided.tools.c1).toMatchObject({ status: 'running', decision: { decision: 'approved', by: 'alice' } })

    s.toolStart(1, 'c1')
    s.toolEnd(1, 'c1', true, '12:00')
    s.text(2, 'tool current_time said: 12:00')
    s.done()
    const st = fold(s.events)
    expect(st.phase).toBe('done')
    expect(st.tools.c1).toMatchObject({ status: 'ok', output: '12:00', decision: { decision: 'approved', by: 'alice' } })
    expect(st.steps.map((x) => x.text)).toEqual(['Let me look at the clock.', 'tool current_time said: 12:00'])
  })

  it('a denied call is decided, then ends failed with the denial, and keeps who denied it', () => {
    const s = waitingRun()
    s.started(1, 2)
    s.decided(1, 'c1', 'ap_1', 'denied', 'bob')
    const decided = fold(s.events)
    expect(decided.tools.c1).toMatchObject({ status: 'failed', decision: { decision: 'denied', by: 'bob' } })
    s.toolStart(1, 'c1')
    s.toolEnd(1, 'c1', false, 'error: the user (bob) denied this call of current_time; it did not run')
    const st = fold(s.events)
    expect(st.tools.c1).toMatchObject({ status: 'failed', decision: { decision: 'denied', by: 'bob' } })
    expect(st.tools.c1.output).toMatch(/denied/)
  })

  it('an expired approval has nobody behind it', () => {
    const s = waitingRun()
    s.started(1, 2)
    s.decided(1, 'c1', 'ap_1', 'expired', null)
    expect(fold(s.events).tools.c1.decision).toEqual({ decision: 'expired', by: null })
  })

  it('keeps waiting while another call of the step is still undecided', () => {
    const s = script()
    s.started(1, 1)
    s.required(1, 'c1', 'ap_1')
    s.required(1, 'c2', 'ap_2')
    s.started(1, 2)
    s.decided(1, 'c1', 'ap_1', 'approved', 'alice')
    const st = fold(s.events)
    expect(st.phase).toBe('waiting_approval')
    expect(st.tools.c2.status).toBe('awaiting_approval')
    expect(st.tools.c1.decision?.decision).toBe('approved')
  })

  it('a crash after an approval drops only the re-run steps, though the attempt number started over', () => {
    const s = script()
    // Attempt 2 (the first worker died before the step) reaches the approval…
    s.started(1, 1)
    s.started(2, 1)
    s.text(1, 'step one')
    s.required(1, 'c1', 'ap_1')
    // …the resume is attempt 1 again, streams part of step 2 and dies…
    s.started(1, 2)
    s.decided(1, 'c1', 'ap_1', 'approved', 'alice')
    s.toolStart(1, 'c1')
    s.toolEnd(1, 'c1', true, 'ok')
    s.text(2, 'half of step two')
    // …and its retry redoes step 2.
    s.started(2, 2)
    s.text(2, 'step two')
    const st = fold(s.events)
    expect(st.steps.map((x) => x.text)).toEqual(['step one', 'step two'])
    expect(st.tools.c1).toMatchObject({ status: 'ok', decision: { decision: 'approved', by: 'alice' } })
  })

  it('a replay from the first event after a reload shows the same buttons again', () => {
    const s = waitingRun()
    const live = fold(s.events)
    const reloaded = fold([...s.events, ...s.events])
    expect(reloaded.tools).toEqual(live.tools)
    expect(reloaded.phase).toBe('waiting_approval')
  })

  describe('pending approvals read over HTTP', () => {
    it('fill in a waiting call when the event log was lost', () => {
      const st = reduceRun(initialRunState(RUN), { kind: 'approvals', approvals: [pending()] })
      expect(st.phase).toBe('waiting_approval')
      expect(st.steps.map((x) => x.step)).toEqual([1])
      expect(st.tools.c1).toMatchObject({
        status: 'awaiting_approval',
        approvalId: 'ap_1',
        args: { tz: 'UTC' },
        expiresAt: Date.parse('2026-01-01T00:30:00Z'),
      })
      // The resume that follows keeps the call and decides it.
      const s = script()
      s.started(1, 2)
      s.decided(1, 'c1', 'ap_1', 'approved', 'alice')
      const after = fold(s.events, st)
      expect(after.tools.c1).toMatchObject({ status: 'running', decision: { by: 'alice' } })
    })

    it('never undo what the events already told', () => {
      const s = waitingRun()
      s.started(1, 2)
      s.decided(1, 'c1', 'ap_1', 'denied', 'bob')
      const st = fold(s.events)
      // A list read before the decision answers after it.
      expect(reduceRun(st, { kind: 'approvals', approvals: [pending()] })).toBe(st)
    })

    it('ignore other runs, decided approvals and finished runs', () => {
      const empty = initialRunState(RUN)
      const others = [pending({ run_id: 'run-b' }), pending({ call_id: 'c9', status: 'approved' })]
      expect(reduceRun(empty, { kind: 'approvals', approvals: others })).toBe(empty)
      const s = script()
      s.started(1, 1)
      s.done()
      const finished = fold(s.events)
      expect(reduceRun(finished, { kind: 'approvals', approvals: [pending()] })).toBe(finished)
    })
  })
})
