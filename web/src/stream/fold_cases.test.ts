// The shared table of fold cases (wire/tests/fold_cases.json): the same events
// must leave this reducer where they leave the Rust fold (weft_wire::fold,
// wire/tests/fold.rs), stated in the table's terms.
import { describe, expect, it } from 'vitest'
import type { RunEvent } from '../types'
import { applyEvent, initialRunState, type RunState } from './reducer'

interface Expect {
  steps: { step: number; text: string; thinking: string }[]
  tools: { call_id: string; status: string; decision: string | null }[]
  outcome: string | null
  citations?: number[]
  memories?: string[]
  /** [id, status] of each item of the list the run sent last */
  todos?: [string, string][]
  questions?: { question_id: string; status: string; answer: string[] }[]
  /** each plan proposed: `proposed` until decided, then the decided status */
  plans?: { plan_id: string; status: string; comment: string | null }[]
  /** each task handed to another agent: `running` until its end is told; `run_id` is the child's run */
  delegations?: { delegation_id: string; agent: string; run_id: string; status: string }[]
  /** the newest heartbeat's elapsed_ms while the run is still working, else null */
  still_working?: number | null
}

interface Case {
  name: string
  events: unknown[]
  expect: Expect
  then?: { events: unknown[]; expect: Expect }
}

function seen(s: RunState) {
  const outcome = s.phase === 'done' || s.phase === 'error' || s.phase === 'cancelled' ? s.phase : null
  return {
    steps: s.steps
      .filter((x) => x.text !== '' || x.thinking !== '')
      .map((x) => ({ step: x.step, text: x.text, thinking: x.thinking })),
    tools: Object.values(s.tools)
      .map((t) => ({ call_id: t.callId, status: t.status, decision: t.decision?.decision ?? null }))
      .sort((a, b) => a.call_id.localeCompare(b.call_id)),
    outcome,
  }
}

function check(state: RunState, events: unknown[], expected: Expect): RunState {
  let s = state
  for (const e of events) s = applyEvent(s, e as RunEvent)
  const { citations, memories, questions, plans, delegations, todos, still_working, ...rest } = expected
  expect(seen(s)).toEqual(rest)
  if (citations) expect((s.citations ?? []).map((c) => c.n)).toEqual(citations)
  if (memories) expect((s.memories ?? []).map((m) => m.id)).toEqual(memories)
  if (still_working !== undefined) expect(s.stillWorkingMs ?? null).toEqual(still_working)
  if (todos) expect((s.todos ?? []).map((i) => [i.id, i.status])).toEqual(todos)
  if (questions) {
    const asked = s.questions.map((q) => ({
      question_id: q.questionId,
      status: q.answered?.status ?? 'pending',
      answer: q.answered?.answer ?? [],
    }))
    expect(asked).toEqual(questions)
  }
  if (plans) {
    const proposed = s.plans.map((p) => ({
      plan_id: p.planId,
      status: p.decided?.status ?? 'proposed',
      comment: p.decided?.comment ?? null,
    }))
    expect(proposed).toEqual(plans)
  }
  if (delegations) {
    const handed = s.delegations.map((d) => ({
      delegation_id: d.delegationId,
      agent: d.agent,
      run_id: d.runId,
      status: d.status,
    }))
    expect(handed).toEqual(delegations)
  }
  return s
}

// Read through Vite when the tests run, not resolved by tsc: the image's web
// build type-checks src/ without the rest of the repository.
const tables = import.meta.glob('../../../wire/tests/fold_cases.json', { eager: true, import: 'default' })

describe('the shared fold cases', () => {
  const table = Object.values(tables)[0] as { cases: Case[] } | undefined
  const cases = table?.cases ?? []
  it('are there', () => {
    expect(Object.keys(tables)).toHaveLength(1)
    expect(cases.length).toBeGreaterThanOrEqual(8)
  })
  for (const c of cases) {
    it(c.name, () => {
      const s = check(initialRunState('r'), c.events, c.expect)
      if (c.then) check(s, c.then.events, c.then.expect)
    })
  }
})
