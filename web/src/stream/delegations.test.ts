// The reducer's delegation rules (docs/protocol.md, "Delegation"), against event
// sequences shaped like the ones the worker publishes: a step that calls `delegate`
// streams its text and announces each task (`agent_start`, naming the child's
// session and run), and the run waits (`waiting_agents`); each child's end puts it
// back on the queue, and the resuming worker sends `run_started` (its
// `resume_step` the step after the delegating one) and the ends it finds
// (`agent_end`) — waiting again while a child still works — then, once every child
// ended, the `delegate` calls as tool_start/tool_end and the next step.

import { describe, expect, it } from 'vitest'
import type { Delegation, RunEvent } from '../types'
import { applyEvent, delegationView, initialRunState, replyText, type RunState } from './reducer'

const RUN = 'run-d'

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
    start: (step: number, id: string, task: string, child = id) =>
      push({
        type: 'agent_start',
        step,
        delegation_id: id,
        call_id: `call_${id}`,
        agent: 'researcher',
        task,
        child_session_id: `s_${child}`,
        child_run_id: `r_${child}`,
      }),
    end: (step: number, id: string, status: string) =>
      push({
        type: 'agent_end',
        step,
        delegation_id: id,
        call_id: `call_${id}`,
        agent: 'researcher',
        child_run_id: `r_${id}`,
        status,
      }),
    required: (step: number, call_id: string) =>
      push({ type: 'approval_required', step, call_id, approval_id: 'ap1', name: 'web_fetch', args: {}, expires_at: 9 }),
    decided: (step: number, call_id: string) =>
      push({ type: 'approval_decided', step, call_id, approval_id: 'ap1', name: 'web_fetch', decision: 'approved', by: 'alice' }),
    toolStart: (step: number, call_id: string) =>
      push({ type: 'tool_start', step, call_id, name: 'delegate', args: { agent: 'researcher', task: 'x' } }),
    toolEnd: (step: number, call_id: string, ok: boolean, output: string) =>
      push({ type: 'tool_end', step, call_id, name: 'delegate', ok, output, duration_ms: 0 }),
    retrying: (step: number) => push({ type: 'retrying', step, attempt: 1, reason: 'upstream 503', delay_ms: 10 }),
    cancelled: () => push({ type: 'cancelled', by: 'user' }),
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
const statuses = (s: RunState) => s.delegations.map((d) => [d.delegationId, d.status])

/** Step 1 says so and hands two tasks to the researcher (d1, d2); the run waits. */
function delegatingRun() {
  const s = script()
  s.started(1, 1)
  s.text(1, 'Asking the researcher twice.')
  s.start(1, 'd1', 'Find A.\nCite the source.')
  s.start(1, 'd2', 'Find B.')
  return s
}

describe('delegations in the run reducer', () => {
  it('handed tasks make the run wait for its children, each with its child run and no tool call yet', () => {
    const st = fold(delegatingRun().events)
    expect(st.phase).toBe('waiting_agents')
    expect(st.delegations).toEqual([
      {
        delegationId: 'd1',
        callId: 'call_d1',
        step: 1,
        agent: 'researcher',
        task: 'Find A.\nCite the source.',
        sessionId: 's_d1',
        runId: 'r_d1',
        status: 'running',
      },
      expect.objectContaining({ delegationId: 'd2', runId: 'r_d2', sessionId: 's_d2', status: 'running' }),
    ])
    // The `delegate` calls start once every child ended.
    expect(st.tools).toEqual({})
    expect(replyText(st)).toBe('Asking the researcher twice.')
  })

  it('resumed by the first end, it waits again for the other child; the last end lets it go on', () => {
    const s = delegatingRun()
    s.started(1, 2)
    s.end(1, 'd1', 'succeeded')
    const one = fold(s.events)
    expect(one.phase).toBe('waiting_agents')
    expect(statuses(one)).toEqual([
      ['d1', 'succeeded'],
      ['d2', 'running'],
    ])

    s.started(1, 2)
    s.end(1, 'd2', 'failed')
    const both = fold(s.events)
    expect(both.phase).toBe('running')
    expect(statuses(both)).toEqual([
      ['d1', 'succeeded'],
      ['d2', 'failed'],
    ])
  })

  it('the calls are answered with the children\'s answers, and the reply goes on and ends with the delegations kept', () => {
    const s = delegatingRun()
    s.started(1, 2)
    s.end(1, 'd1', 'succeeded')
    s.end(1, 'd2', 'cancelled')
    s.toolStart(1, 'call_d1')
    s.toolStart(1, 'call_d2')
    s.toolEnd(1, 'call_d1', true, 'A is one.')
    s.toolEnd(1, 'call_d2', false, "error: the agent researcher's run was cancelled")
    s.text(2, 'A is one; B is unknown.')
    s.done()
    const st = fold(s.events)
    expect(st.phase).toBe('done')
    expect(statuses(st)).toEqual([
      ['d1', 'succeeded'],
      ['d2', 'cancelled'],
    ])
    expect(st.tools.call_d1).toMatchObject({ status: 'ok', output: 'A is one.' })
    expect(st.tools.call_d2?.status).toBe('failed')
    expect(st.steps.find((x) => x.step === 1)?.tools).toEqual(['call_d1', 'call_d2'])
    expect(replyText(st)).toBe('Asking the researcher twice.\n\nA is one; B is unknown.')
  })

  it('waits for a person before its children: an approval of the same step is what the run needs first', () => {
    const s = script()
    s.started(1, 1)
    s.required(1, 'call_w')
    s.start(1, 'd1', 'Find A.')
    expect(fold(s.events).phase).toBe('waiting_approval')
    s.started(1, 2)
    s.decided(1, 'call_w')
    expect(fold(s.events).phase).toBe('waiting_agents')
  })

  it('a retried step forgets the tasks it handed out', () => {
    const s = delegatingRun()
    s.retrying(1)
    const st = fold(s.events)
    expect(st.delegations).toEqual([])
    expect(st.phase).toBe('retrying')
  })

  it('a later attempt resuming at or before the delegating step voids its delegations; one resuming after keeps them', () => {
    const again = delegatingRun()
    again.started(2, 1)
    again.text(1, 'Doing it myself.')
    const st = fold(again.events)
    expect(st.delegations).toEqual([])
    expect(st.phase).toBe('running')
    expect(replyText(st)).toBe('Doing it myself.')

    const after = delegatingRun()
    after.started(1, 2)
    expect(statuses(fold(after.events))).toEqual([
      ['d1', 'running'],
      ['d2', 'running'],
    ])
  })

  it('a delegation told again is shown once, as told last; an end of one never told changes nothing', () => {
    const s = delegatingRun()
    s.start(1, 'd1', 'Find A again.', 'd1b')
    const st = fold(s.events)
    expect(st.delegations.map((d) => [d.delegationId, d.task, d.runId])).toEqual([
      ['d2', 'Find B.', 'r_d2'],
      ['d1', 'Find A again.', 'r_d1b'],
    ])
    const replay = fold(
      s.events.map((e, i) => ({ ...e, seq: 10 + i })),
      st,
    )
    expect(replay.delegations).toHaveLength(2)

    const lost = script()
    lost.started(1, 2)
    lost.end(1, 'd9', 'succeeded')
    const gone = fold(lost.events)
    expect(gone.delegations).toEqual([])
    expect(gone.lastSeq).toBe(2)
  })

  it('a reply cancelled while its children work keeps them as they were last told', () => {
    const s = delegatingRun()
    s.cancelled()
    const st = fold(s.events)
    expect(st.phase).toBe('cancelled')
    expect(statuses(st)).toEqual([
      ['d1', 'running'],
      ['d2', 'running'],
    ])
  })

  it('a stored delegation reads as its events told it, for a finished reply after a reload', () => {
    const s = delegatingRun()
    s.end(1, 'd1', 'failed')
    const told = fold(s.events).delegations.find((d) => d.delegationId === 'd1')
    const stored: Delegation = {
      id: 'd1',
      run_id: RUN,
      session_id: 's',
      step: 1,
      call_id: 'call_d1',
      agent: 'researcher',
      task: 'Find A.\nCite the source.',
      child_session_id: 's_d1',
      child_run_id: 'r_d1',
      status: 'failed',
      created_at: '2026-01-01T00:00:00Z',
      finished_at: '2026-01-01T00:00:05Z',
    }
    expect(delegationView(stored)).toEqual(told)
  })
})
