import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { Run, RunEvent } from '../types'
import { RunAttachment } from './attach'

/** A scriptable stand-in for the browser's EventSource. */
class FakeES {
  static all: FakeES[] = []
  readyState = 0
  onopen: (() => void) | null = null
  onerror: (() => void) | null = null
  onmessage: ((m: MessageEvent) => void) | null = null
  closed = false
  private listeners = new Map<string, ((m: MessageEvent) => void)[]>()
  readonly url: string
  constructor(url: string) {
    this.url = url
    FakeES.all.push(this)
  }
  addEventListener(type: string, fn: (m: MessageEvent) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn])
  }
  close() {
    this.closed = true
    this.readyState = 2
  }
  open() {
    this.readyState = 1
    this.onopen?.()
  }
  emit(ev: Partial<RunEvent> & { type: string; seq: number }) {
    const data = JSON.stringify({ run_id: 'r1', ts: 0, ...ev })
    for (const fn of this.listeners.get(ev.type) ?? []) fn({ data } as MessageEvent)
  }
  /** the browser retries by itself */
  blip() {
    this.readyState = 0
    this.onerror?.()
  }
  /** the browser gave up (non-200 answer) */
  fail() {
    this.readyState = 2
    this.onerror?.()
  }
}

const run = (status: Run['status']): Run => ({
  id: 'r1',
  session_id: 's',
  status,
  attempt: 1,
  model: 'mock',
  usage: { input: 0, output: 0, cache_read: 0, reasoning: 0 },
  ttft_ms: null,
  duration_ms: null,
  error: null,
  created_at: '',
})

function attach(getRun: (id: string) => Promise<Run> = async () => run('running')) {
  const events: RunEvent[] = []
  const conn: string[] = []
  const onGone = vi.fn()
  const att = new RunAttachment({
    runId: 'r1',
    onEvent: (e) => events.push(e),
    onConnection: (s) => conn.push(s),
    onGone,
    getRun,
    EventSourceImpl: FakeES as unknown as typeof EventSource,
  })
  return { att, events, conn, onGone, es: () => FakeES.all[FakeES.all.length - 1] }
}

describe('RunAttachment', () => {
  beforeEach(() => {
    FakeES.all = []
    vi.useFakeTimers()
  })
  afterEach(() => vi.useRealTimers())

  it('forwards named events and closes itself on a terminal event', () => {
    const a = attach()
    a.es().open()
    a.es().emit({ type: 'text', seq: 1 })
    a.es().emit({ type: 'done', seq: 2 })
    expect(a.events.map((e) => e.type)).toEqual(['text', 'done'])
    expect(a.es().closed).toBe(true)
    expect(a.conn).toEqual(['open'])
    // No reconnect follows.
    vi.advanceTimersByTime(120_000)
    expect(FakeES.all).toHaveLength(1)
  })

  it('lets the browser retry a blip, reporting "lost"', () => {
    const a = attach()
    a.es().open()
    a.es().blip()
    expect(a.conn).toEqual(['open', 'lost'])
    expect(FakeES.all).toHaveLength(1)
  })

  it('re-attaches with ?after=<last seq> when the browser gives up', async () => {
    const a = attach()
    a.es().open()
    a.es().emit({ type: 'text', seq: 1 })
    a.es().emit({ type: 'text', seq: 2 })
    a.es().fail()
    await vi.advanceTimersByTimeAsync(1_000)
    expect(FakeES.all).toHaveLength(2)
    expect(a.es().url).toBe('/v1/runs/r1/events?after=2')
  })

  it('gives up to the messages when the run is unknown', async () => {
    const a = attach(async () => {
      throw Object.assign(new Error('nope'), { status: 404 })
    })
    a.es().fail()
    await vi.advanceTimersByTimeAsync(0)
    expect(a.onGone).toHaveBeenCalledTimes(1)
    await vi.advanceTimersByTimeAsync(60_000)
    expect(FakeES.all).toHaveLength(1)
  })

  it('gives up to the messages when a finished run has no readable events (expired)', async () => {
    const a = attach(async () => run('succeeded'))
    a.es().fail()
    await vi.advanceTimersByTimeAsync(1_000)
    expect(a.onGone).not.toHaveBeenCalled()
    a.es().fail()
    await vi.advanceTimersByTimeAsync(0)
    expect(a.onGone).toHaveBeenCalledTimes(1)
  })

  it('re-attaches when the stream goes silent past the heartbeat interval', async () => {
    const a = attach()
    a.es().open()
    a.es().emit({ type: 'text', seq: 5 })
    await vi.advanceTimersByTimeAsync(80_000)
    expect(FakeES.all.length).toBeGreaterThan(1)
    expect(a.es().url).toBe('/v1/runs/r1/events?after=5')
  })

  it('close() stops everything', async () => {
    const a = attach()
    a.att.close()
    expect(a.es().closed).toBe(true)
    a.es().fail()
    await vi.advanceTimersByTimeAsync(60_000)
    expect(FakeES.all).toHaveLength(1)
  })
})
