// The reducer's question rules (docs/protocol.md, "Questions"), against event
// sequences shaped like the ones the worker publishes: a step that calls
// `ask_user` streams its text, announces `question` and suspends
// (`waiting_input`); the resuming worker sends `run_started` (its `resume_step`
// the step after the asking one, attempts counted from 1 again),
// `question_answered`, then the `ask_user` call as tool_start/tool_end and the
// next step.

import { describe, expect, it } from 'vitest'
import type { Question, RunEvent } from '../types'
import { applyEvent, initialRunState, questionView, reduceRun, replyText, type RunState } from './reducer'

const RUN = 'run-q'

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
    question: (step: number, call_id: string, question_id: string, over: Record<string, unknown> = {}) =>
      push({
        type: 'question',
        step,
        call_id,
        question_id,
        question: 'Which colour?',
        options: ['red', 'blue'],
        multiple: false,
        allow_text: true,
        expires_at: 1_800_000,
        ...over,
      }),
    answered: (step: number, call_id: string, question_id: string, answer: string[], by: string | null) =>
      push({
        type: 'question_answered',
        step,
        call_id,
        question_id,
        status: answer.length ? 'answered' : 'expired',
        answer,
        by,
      }),
    required: (step: number, call_id: string, approval_id: string) =>
      push({ type: 'approval_required', step, call_id, approval_id, name: 'current_time', args: {}, expires_at: 9 }),
    toolStart: (step: number, call_id: string) =>
      push({ type: 'tool_start', step, call_id, name: 'ask_user', args: { question: 'Which colour?' } }),
    toolEnd: (step: number, call_id: string, output: string) =>
      push({ type: 'tool_end', step, call_id, name: 'ask_user', ok: true, output, duration_ms: 0 }),
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

/** Step 1 says something, then asks q1 (call c1) and waits. */
function askingRun() {
  const s = script()
  s.started(1, 1)
  s.text(1, 'Let me ask.')
  s.question(1, 'c1', 'q1')
  return s
}

const open = (over: Partial<Question> = {}): Question => ({
  id: 'q1',
  run_id: RUN,
  session_id: 's',
  call_id: 'c1',
  step: 1,
  question: 'Which colour?',
  options: ['red', 'blue'],
  multiple: false,
  allow_text: false,
  status: 'pending',
  answer: [],
  created_at: '2026-01-01T00:00:00Z',
  expires_at: '2026-01-01T00:30:00Z',
  ...over,
})

describe('questions in the run reducer', () => {
  it('a question makes the run wait for input, with the question, its choices and its expiry', () => {
    const st = fold(askingRun().events)
    expect(st.phase).toBe('waiting_input')
    expect(st.questions).toEqual([
      {
        questionId: 'q1',
        callId: 'c1',
        step: 1,
        question: 'Which colour?',
        options: ['red', 'blue'],
        multiple: false,
        allowText: true,
        expiresAt: 1_800_000,
      },
    ])
    // It is no tool call yet: the call runs once answered.
    expect(st.tools).toEqual({})
    expect(replyText(st)).toBe('Let me ask.')
  })

  it('the answer comes with the resume: who answered, the call ends with it, the reply goes on', () => {
    const s = askingRun()
    s.started(1, 2)
    const resumed = fold(s.events)
    expect(replyText(resumed)).toBe('Let me ask.')
    expect(resumed.questions[0].answered).toBeUndefined()

    s.answered(1, 'c1', 'q1', ['blue'], 'alice')
    const answered = fold(s.events)
    expect(answered.phase).toBe('running')
    expect(answered.questions[0].answered).toEqual({ status: 'answered', answer: ['blue'], by: 'alice' })

    s.toolStart(1, 'c1')
    s.toolEnd(1, 'c1', 'The user (alice) answered: blue')
    s.text(2, 'Blue it is.')
    s.done()
    const st = fold(s.events)
    expect(st.phase).toBe('done')
    expect(st.tools.c1).toMatchObject({ status: 'ok', output: 'The user (alice) answered: blue' })
    expect(st.steps[0].tools).toEqual(['c1'])
    expect(st.questions[0].answered?.answer).toEqual(['blue'])
    expect(replyText(st)).toBe('Let me ask.\n\nBlue it is.')
  })

  it('an expired question has no answer and nobody behind it', () => {
    const s = askingRun()
    s.started(1, 2)
    s.answered(1, 'c1', 'q1', [], null)
    const st = fold(s.events)
    expect(st.questions[0].answered).toEqual({ status: 'expired', answer: [], by: null })
    expect(st.phase).toBe('running')
  })

  it('a new attempt from the asking step voids the question; one from a later step keeps it', () => {
    const again = askingRun()
    again.started(2, 1)
    const st = fold(again.events)
    expect(st.questions).toEqual([])
    expect(st.steps).toEqual([])

    const later = askingRun()
    later.started(1, 2)
    later.text(2, 'partial')
    later.started(2, 2)
    const kept = fold(later.events)
    expect(kept.questions.map((q) => q.questionId)).toEqual(['q1'])
    expect(replyText(kept)).toBe('Let me ask.')
  })

  it('retrying the asking step voids its question, not another step\'s', () => {
    const s = script()
    s.started(1, 1)
    s.question(1, 'c1', 'q1')
    s.started(1, 2)
    s.answered(1, 'c1', 'q1', ['red'], 'bob')
    s.question(2, 'c2', 'q2')
    s.retrying(2)
    const st = fold(s.events)
    expect(st.questions.map((q) => q.questionId)).toEqual(['q1'])
    expect(st.phase).toBe('retrying')
  })

  it('a question told again replaces the first telling', () => {
    const s = askingRun()
    s.question(1, 'c1', 'q1', { question: 'Which colour, again?' })
    const st = fold(s.events)
    expect(st.questions.map((q) => q.question)).toEqual(['Which colour, again?'])
  })

  it('an answer to a question the run never showed changes nothing but the seq', () => {
    const s = script()
    s.started(1, 1)
    s.answered(1, 'c9', 'q9', ['x'], 'alice')
    const st = fold(s.events)
    expect(st.questions).toEqual([])
    expect(st.lastSeq).toBe(2)
  })

  it('keeps waiting while an approval of the run is undecided', () => {
    const s = script()
    s.started(1, 1)
    s.required(1, 'c0', 'ap_1')
    s.question(1, 'c1', 'q1')
    s.started(1, 2)
    s.answered(1, 'c1', 'q1', ['red'], 'bob')
    expect(fold(s.events).phase).toBe('waiting_approval')
  })

  it('a run cancelled while it waits freezes with the question unanswered', () => {
    const s = askingRun()
    s.cancelled()
    s.answered(1, 'c1', 'q1', ['red'], 'bob')
    const st = fold(s.events)
    expect(st.phase).toBe('cancelled')
    expect(st.questions[0].answered).toBeUndefined()
  })

  describe('the open questions read over HTTP', () => {
    it('fill in a question a lost event log no longer replays', () => {
      const st = reduceRun(initialRunState(RUN), { kind: 'questions', questions: [open()] })
      expect(st.phase).toBe('waiting_input')
      expect(st.steps.map((x) => x.step)).toEqual([1])
      expect(st.questions).toEqual([
        {
          questionId: 'q1',
          callId: 'c1',
          step: 1,
          question: 'Which colour?',
          options: ['red', 'blue'],
          multiple: false,
          allowText: false,
          expiresAt: Date.parse('2026-01-01T00:30:00Z'),
        },
      ])
    })

    it('leave alone what the events told, other runs\' questions and closed ones', () => {
      const s = askingRun()
      s.started(1, 2)
      s.answered(1, 'c1', 'q1', ['blue'], 'alice')
      const told = fold(s.events)
      const st = reduceRun(told, {
        kind: 'questions',
        questions: [open(), open({ id: 'q2', run_id: 'other' }), open({ id: 'q3', status: 'expired' })],
      })
      expect(st).toBe(told)
    })

    it('are overtaken by the events that follow', () => {
      const listed = reduceRun(initialRunState(RUN), { kind: 'questions', questions: [open()] })
      const s = askingRun()
      s.started(1, 2)
      s.answered(1, 'c1', 'q1', ['red'], 'bob')
      const st = fold(s.events, listed)
      expect(st.questions).toHaveLength(1)
      expect(st.questions[0]).toMatchObject({ allowText: true, answered: { answer: ['red'], by: 'bob' } })
    })

    it('change nothing once the run ended', () => {
      const s = askingRun()
      s.cancelled()
      const ended = fold(s.events)
      expect(reduceRun(ended, { kind: 'questions', questions: [open({ id: 'q2', call_id: 'c2' })] })).toBe(ended)
    })
  })
})

describe('a stored question, as a finished reply shows it after a reload', () => {
  it('is its card: the text, the options, and what was answered by whom', () => {
    const answered = questionView(
      open({ status: 'answered', answer: ['blue'], answered_by: 'alice', answered_at: '2026-12-05T10:00:01Z' }),
    )
    expect(answered).toMatchObject({
      questionId: 'q1',
      callId: 'c1',
      options: ['red', 'blue'],
      allowText: false,
      answered: { status: 'answered', answer: ['blue'], by: 'alice' },
    })
    expect(questionView(open({ status: 'expired' })).answered).toEqual({ status: 'expired', answer: [], by: null })
    expect(questionView(open()).answered).toBeUndefined()
    expect(questionView(open()).expiresAt).toBe(Date.parse(open().expires_at))
  })
})
