import { describe, expect, it } from 'vitest'
import type { RunEvent } from '../types'
import { applyEvent, initialRunState, isTerminal, reduceRun, replyText, type RunState } from './reducer'

const RUN = 'run-1'

/** Builds events with consecutive seqs, like one worker would emit them. */
function script() {
  let seq = 0
  const out: RunEvent[] = []
  const push = (body: Record<string, unknown>) => {
    seq += 1
    const ev = { run_id: RUN, seq, ts: 1_000 + seq * 10, ...body } as RunEvent
    out.push(ev)
    return ev
  }
  return {
    events: out,
    started: (attempt = 1, resume_step = 1) =>
      push({ type: 'run_started', session_id: 's', model: 'mock', attempt, resume_step }),
    text: (step: number, delta: string) => push({ type: 'text', step, delta }),
    thinking: (step: number, delta: string) => push({ type: 'thinking', step, delta }),
    toolStart: (step: number, call_id: string, name = 'current_time', args: unknown = {}) =>
      push({ type: 'tool_start', step, call_id, name, args }),
    toolEnd: (step: number, call_id: string, ok = true, output = 'ok') =>
      push({ type: 'tool_end', step, call_id, name: 'current_time', ok, output, duration_ms: 12 }),
    approval: (step: number, call_id: string, approval_id: string, expires_at = 9_000_000) =>
      push({ type: 'approval_required', step, call_id, approval_id, name: 'web_fetch', args: { url: 'x' }, expires_at }),
    usage: (input: number, output: number) => push({ type: 'usage', input, output, cache_read: 0, reasoning: 0 }),
    retrying: (step: number, attempt = 1) =>
      push({ type: 'retrying', step, attempt, reason: 'upstream 503', delay_ms: 500 }),
    heartbeat: (elapsed_ms = 30_000, idle_ms = 30_000) => push({ type: 'heartbeat', elapsed_ms, idle_ms }),
    citations: (...ns: number[]) =>
      push({
        type: 'citations',
        items: ns.map((n) => ({
          n,
          knowledge_id: 'kb-1',
          document_id: `doc-${n}`,
          document_name: `doc${n}.md`,
          chunk_id: `chunk-${n}`,
          snippet: `passage ${n}`,
          position: `Handbook > Part ${n}`,
        })),
      }),
    done: () =>
      push({
        type: 'done',
        message_id: 'm-9',
        model: 'mock',
        usage: { input: 10, output: 20, cache_read: 1, reasoning: 0 },
        ttft_ms: 42,
        duration_ms: 900,
      }),
    error: () => push({ type: 'error', code: 'provider_error', message: 'boom' }),
    cancelled: () => push({ type: 'cancelled', by: 'user' }),
  }
}

const fold = (events: RunEvent[], from: RunState = initialRunState(RUN)) => events.reduce(applyEvent, from)

describe('run reducer', () => {
  it('appends text and thinking deltas per step, in step order', () => {
    const s = script()
    s.started()
    s.thinking(1, 'hmm ')
    s.text(1, 'Hello')
    s.text(1, ', world')
    s.toolStart(1, 'c1')
    s.toolEnd(1, 'c1')
    s.text(2, 'second')
    const st = fold(s.events)
    expect(st.phase).toBe('running')
    expect(st.steps.map((x) => [x.step, x.thinking, x.text])).toEqual([
      [1, 'hmm ', 'Hello, world'],
      [2, '', 'second'],
    ])
    expect(replyText(st)).toBe('Hello, world\n\nsecond')
    expect(st.lastSeq).toBe(7)
  })

  it('times a step\'s thinking: from its first thinking delta to its first text or tool call', () => {
    const s = script()
    s.started() // ts 1010
    s.thinking(1, 'let me ') // 1020
    s.thinking(1, 'see') // 1030
    const thinking = fold(s.events)
    expect(thinking.steps[0].thinkingMs).toBeUndefined()
    s.text(1, 'So.') // 1040
    s.thinking(1, ' more') // 1050: late thinking does not move it
    s.thinking(2, 'and then') // 1060
    s.toolStart(2, 'c1') // 1070
    s.text(3, 'no thinking') // 1080
    const st = fold(s.events)
    expect(st.steps.map((x) => x.thinkingMs)).toEqual([20, 10, undefined])
  })

  it('ignores events it has already applied (seq dedupe), so replay is harmless', () => {
    const s = script()
    s.started()
    for (let i = 1; i <= 5; i++) s.text(1, `w${i} `)
    const once = fold(s.events)
    // A re-attach that replays from the start, then continues.
    s.text(1, 'w6')
    const replayed = fold(s.events, once)
    expect(replyText(replayed)).toBe('w1 w2 w3 w4 w5 w6')
    // Replaying a seq already seen returns the very same object.
    expect(applyEvent(replayed, s.events[2])).toBe(replayed)
  })

  it('reconstructs a reply exactly when a reload replays a prefix and then the rest', () => {
    const s = script()
    s.started()
    const words = Array.from({ length: 50 }, (_, i) => `w${i + 1}`)
    words.forEach((w, i) => s.text(1, i === 0 ? w : ` ${w}`))
    s.done()
    // First page view saw 20 events; the reloaded page replays everything from 0,
    // while an overlapping Last-Event-ID reconnect delivers 15..end again.
    const before = fold(s.events.slice(0, 20))
    const after = fold([...s.events.slice(14), ...s.events], before)
    expect(replyText(after)).toBe(words.join(' '))
    expect(after.phase).toBe('done')
  })

  it('drops steps >= resume_step from an earlier attempt when a new attempt starts', () => {
    const s = script()
    s.started(1, 1)
    s.text(1, 'step one done')
    s.toolStart(1, 'c1')
    s.toolEnd(1, 'c1')
    s.text(2, 'partial from the dead worker')
    s.toolStart(2, 'c2')
    s.started(2, 2)
    s.text(2, 'fresh step two')
    const st = fold(s.events)
    expect(st.attempt).toBe(2)
    expect(st.steps.map((x) => x.text)).toEqual(['step one done', 'fresh step two'])
    expect(Object.keys(st.tools)).toEqual(['c1'])
    expect(st.steps[1].tools).toEqual([])
  })

  it('resume_step 1 on a new attempt starts the reply over', () => {
    const s = script()
    s.started(1, 1)
    s.thinking(1, 'old thoughts')
    s.text(1, 'old text')
    s.started(2, 1)
    s.text(1, 'new text')
    const st = fold(s.events)
    expect(st.steps).toEqual([{ step: 1, thinking: '', text: 'new text', tools: [] }])
  })

  it('retrying restarts that step only', () => {
    const s = script()
    s.started()
    s.text(1, 'first step')
    s.thinking(2, 'half a thought')
    s.text(2, 'half a repl')
    s.retrying(2)
    const mid = fold(s.events)
    expect(mid.phase).toBe('retrying')
    expect(mid.retry?.step).toBe(2)
    expect(mid.steps[1]).toEqual({ step: 2, thinking: '', text: '', tools: [] })
    s.text(2, 'whole reply')
    const st = fold(s.events)
    expect(st.phase).toBe('running')
    expect(st.retry).toBeUndefined()
    expect(st.steps.map((x) => x.text)).toEqual(['first step', 'whole reply'])
  })

  it('retrying forgets tool calls the restarted step had announced', () => {
    const s = script()
    s.started()
    s.toolStart(1, 'c1')
    s.retrying(1)
    s.toolStart(1, 'c1b')
    const st = fold(s.events)
    expect(Object.keys(st.tools)).toEqual(['c1b'])
    expect(st.steps[0].tools).toEqual(['c1b'])
  })

  it('tracks tool calls by call_id from start to end', () => {
    const s = script()
    s.started()
    s.toolStart(1, 'a', 'current_time', { tz: 'UTC' })
    s.toolStart(1, 'b', 'web_fetch', { url: 'https://example.com' })
    s.toolEnd(1, 'b', false, 'refused: private address')
    const st = fold(s.events)
    expect(st.steps[0].tools).toEqual(['a', 'b'])
    expect(st.tools.a).toMatchObject({ status: 'running', args: { tz: 'UTC' } })
    expect(st.tools.b).toMatchObject({
      status: 'failed',
      output: 'refused: private address',
      durationMs: 12,
      args: { url: 'https://example.com' },
    })
  })

  it('approval_required waits, a later tool_end resumes', () => {
    const s = script()
    s.started()
    s.toolStart(1, 'c1')
    s.approval(1, 'c1', 'ap-7')
    const waiting = fold(s.events)
    expect(waiting.phase).toBe('waiting_approval')
    expect(waiting.tools.c1).toMatchObject({ status: 'awaiting_approval', approvalId: 'ap-7', name: 'current_time' })
    s.toolEnd(1, 'c1')
    const st = fold(s.events)
    expect(st.phase).toBe('running')
    expect(st.tools.c1.status).toBe('ok')
  })

  it('usage is cumulative: the latest value wins', () => {
    const s = script()
    s.started()
    s.usage(10, 1)
    s.usage(10, 7)
    expect(fold(s.events).usage).toEqual({ input: 10, output: 7, cache_read: 0, reasoning: 0 })
  })

  it('usage keeps how full the context is, for the footer', () => {
    const s = script()
    s.started()
    s.usage(10, 1)
    const ev = s.events[s.events.length - 1] as Extract<RunEvent, { type: 'usage' }>
    ev.context_tokens = 13_500
    ev.context_window = 32_000
    expect(fold(s.events).usage).toMatchObject({ context_tokens: 13_500, context_window: 32_000 })
  })

  it('done is terminal and carries the totals; nothing applies after it', () => {
    const s = script()
    s.started()
    s.text(1, 'answer')
    s.done()
    s.text(1, ' late')
    const st = fold(s.events)
    expect(isTerminal(st)).toBe(true)
    expect(st).toMatchObject({ phase: 'done', messageId: 'm-9', ttftMs: 42, durationMs: 900 })
    expect(st.usage?.output).toBe(20)
    expect(replyText(st)).toBe('answer')
  })

  it('error and cancelled are terminal and keep the partial text', () => {
    const e = script()
    e.started()
    e.text(1, 'partial')
    e.error()
    const err = fold(e.events)
    expect(err.phase).toBe('error')
    expect(err.error).toEqual({ code: 'provider_error', message: 'boom' })
    expect(replyText(err)).toBe('partial')

    const c = script()
    c.started()
    c.text(1, 'w1 w2')
    c.cancelled()
    const can = fold(c.events)
    expect(can.phase).toBe('cancelled')
    expect(can.cancelledBy).toBe('user')
    expect(replyText(can)).toBe('w1 w2')
  })

  it('heartbeats and unknown event types only advance seq', () => {
    const s = script()
    s.started()
    s.text(1, 'x')
    const before = fold(s.events)
    const hb = s.heartbeat()
    const afterHb = applyEvent(before, hb)
    expect(afterHb.lastSeq).toBe(3)
    expect(afterHb.steps).toBe(before.steps)
    const unknown = { type: 'future_thing', run_id: RUN, seq: 4, ts: 0 } as unknown as RunEvent
    expect(applyEvent(afterHb, unknown)).toMatchObject({ lastSeq: 4, phase: 'running' })
  })

  it('shows a run silent but for heartbeats for three minutes as still working, until it says anything else', () => {
    const s = script()
    s.started()
    s.toolStart(1, 'c1', 'web_fetch')
    s.heartbeat(150_000, 150_000)
    expect(fold(s.events).stillWorkingMs).toBeUndefined()
    s.heartbeat(190_000, 180_000)
    expect(fold(s.events).stillWorkingMs).toBe(190_000)
    s.heartbeat(250_000, 240_000)
    expect(fold(s.events).stillWorkingMs).toBe(250_000)
    s.toolEnd(1, 'c1')
    expect(fold(s.events).stillWorkingMs).toBeUndefined()
    // An older worker's heartbeat has no idle_ms: never still working.
    const old = { type: 'heartbeat', run_id: RUN, seq: 99, ts: 0, elapsed_ms: 900_000 } as unknown as RunEvent
    expect(applyEvent(fold(s.events), old).stillWorkingMs).toBeUndefined()
  })

  it('ignores events of another run', () => {
    const st = initialRunState(RUN)
    const other = { type: 'text', run_id: 'run-2', seq: 1, ts: 0, step: 1, delta: 'no' } as RunEvent
    expect(applyEvent(st, other)).toBe(st)
  })

  it('records first-token time for a live TTFT', () => {
    const s = script()
    s.started()
    s.heartbeat()
    s.thinking(1, 'a')
    s.text(1, 'b')
    const st = fold(s.events)
    expect(st.startedTs).toBe(1_010)
    expect(st.firstTokenTs).toBe(1_030)
  })

  it('shows reconnecting on a lost connection until the next event or open', () => {
    const s = script()
    s.started()
    let st = fold(s.events)
    st = reduceRun(st, { kind: 'connection', state: 'lost' })
    expect(st.reconnecting).toBe(true)
    st = reduceRun(st, { kind: 'event', event: s.text(1, 'hi') })
    expect(st.reconnecting).toBe(false)
    st = reduceRun(st, { kind: 'connection', state: 'lost' })
    st = reduceRun(st, { kind: 'connection', state: 'open' })
    expect(st.reconnecting).toBe(false)
    // An unchanged connection state returns the same object (no re-render).
    expect(reduceRun(st, { kind: 'connection', state: 'open' })).toBe(st)
  })

  it('a dropped connection after the end is not "reconnecting"', () => {
    const s = script()
    s.started()
    s.done()
    const st = reduceRun(fold(s.events), { kind: 'connection', state: 'lost' })
    expect(st.reconnecting).toBe(false)
  })

  it('keeps the todo list the run last sent, whole', () => {
    const sc = script()
    sc.started()
    const item = (id: string, status: string) => ({ id, text: `item ${id}`, status })
    sc.events.push({ run_id: RUN, seq: 2, ts: 1_020, type: 'todo', step: 1, items: [item('1', 'pending')] } as RunEvent)
    sc.events.push({
      run_id: RUN,
      seq: 3,
      ts: 1_030,
      type: 'todo',
      step: 1,
      items: [item('1', 'done'), item('2', 'pending')],
    } as RunEvent)
    const st = fold(sc.events)
    expect(st.todos?.map((i) => [i.id, i.status])).toEqual([
      ['1', 'done'],
      ['2', 'pending'],
    ])
    expect(fold(sc.events.slice(0, 1)).todos).toBeUndefined()
  })

  it('keeps the state object immutable', () => {
    const s = script()
    s.started()
    s.text(1, 'a')
    const a = fold(s.events)
    const frozen = JSON.stringify(a)
    applyEvent(a, s.text(1, 'b'))
    applyEvent(a, s.retrying(1))
    expect(JSON.stringify(a)).toBe(frozen)
  })

  it('keeps the sources the answer cites, through done and a replay of the whole log', () => {
    const s = script()
    s.started()
    s.text(1, 'Leave is 25 days [1], laptops last three years [2].')
    const before = fold(s.events)
    expect(before.citations).toBeUndefined()
    s.citations(1, 2)
    s.done()
    const st = fold(s.events)
    expect(st.phase).toBe('done')
    expect(st.citations?.map((c) => [c.n, c.document_name, c.chunk_id])).toEqual([
      [1, 'doc1.md', 'chunk-1'],
      [2, 'doc2.md', 'chunk-2'],
    ])
    // A re-attach replays every event: the list is the same, not doubled.
    expect(fold(s.events, st)).toBe(st)
    expect(fold(s.events, before).citations).toHaveLength(2)
    // The reply text is left as the model wrote it: the [n] are drawn as footnotes.
    expect(replyText(st)).toBe('Leave is 25 days [1], laptops last three years [2].')
  })

  it('a later citations event replaces the list rather than adding to it', () => {
    const s = script()
    s.started()
    s.citations(1, 2)
    s.citations(3)
    expect(fold(s.events).citations?.map((c) => c.n)).toEqual([3])
  })
})
