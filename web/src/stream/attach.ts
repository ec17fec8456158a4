// Keeps one EventSource attached to a run until the run ends.
//
// The browser's own EventSource reconnect resends Last-Event-ID, which covers a
// plain network blip. When the browser gives up (a non-200 answer, e.g. a gateway
// restarting behind a proxy) or the connection goes silent past the heartbeat
// interval, we re-attach ourselves with `?after=<last seq>`. Dedupe and ordering are
// the reducer's job; this module only moves events and reports connection state.

import { runEventsUrl } from '../api'
import { RUN_EVENT_TYPES, type Run, type RunEvent } from '../types'

const TERMINAL = new Set(['done', 'error', 'cancelled'])
const TERMINAL_RUN = new Set(['succeeded', 'failed', 'cancelled'])
/** The gateway sends a `heartbeat` event after 30 s of silence. */
const SILENCE_MS = 75_000

export interface AttachOptions {
  runId: string
  /** last seq already applied; 0 replays the run from its first event */
  after?: number
  onEvent: (ev: RunEvent) => void
  onConnection: (state: 'open' | 'lost') => void
  /** the run's events cannot be read (unknown run, log expired): read messages instead */
  onGone: () => void
  getRun: (id: string) => Promise<Run>
  EventSourceImpl?: typeof EventSource
}

export class RunAttachment {
  private es?: EventSource
  private lastSeq: number
  private stopped = false
  private failures = 0
  private retryTimer?: ReturnType<typeof setTimeout>
  private silenceTimer?: ReturnType<typeof setTimeout>
  private readonly opts: AttachOptions
  private readonly onOnline = () => {
    if (!this.stopped && this.es?.readyState !== 1) this.reopen(0)
  }

  constructor(opts: AttachOptions) {
    this.opts = opts
    this.lastSeq = opts.after ?? 0
    this.open()
    globalThis.addEventListener?.('online', this.onOnline)
  }

  close(): void {
    this.stopped = true
    clearTimeout(this.retryTimer)
    clearTimeout(this.silenceTimer)
    this.es?.close()
    this.es = undefined
    globalThis.removeEventListener?.('online', this.onOnline)
  }

  private open(): void {
    if (this.stopped) return
    const ES = this.opts.EventSourceImpl ?? EventSource
    const es = new ES(runEventsUrl(this.opts.runId, this.lastSeq), { withCredentials: true })
    this.es = es
    const handle = (m: MessageEvent) => this.handle(es, m)
    for (const t of RUN_EVENT_TYPES) es.addEventListener(t, handle as EventListener)
    es.onmessage = handle
    es.onopen = () => {
      if (this.es !== es) return
      this.opts.onConnection('open')
      this.armSilence()
    }
    es.onerror = () => {
      if (this.stopped || this.es !== es) return
      this.opts.onConnection('lost')
      // CONNECTING: the browser retries by itself with Last-Event-ID.
      if (es.readyState === 2) void this.recover()
    }
    this.armSilence()
  }

  private handle(es: EventSource, m: MessageEvent): void {
    if (this.stopped || this.es !== es) return
    let ev: RunEvent
    try {
      ev = JSON.parse(m.data) as RunEvent
    } catch {
      return
    }
    if (typeof ev.seq === 'number' && ev.seq > this.lastSeq) this.lastSeq = ev.seq
    this.failures = 0
    this.armSilence()
    this.opts.onEvent(ev)
    if (TERMINAL.has(ev.type)) this.close()
  }

  private armSilence(): void {
    clearTimeout(this.silenceTimer)
    if (this.stopped) return
    // Quietly: a run waiting for approval can be silent for long, and a fresh
    // connection that fails reports itself through onerror anyway.
    this.silenceTimer = setTimeout(() => {
      if (!this.stopped) this.reopen(0)
    }, SILENCE_MS)
  }

  private reopen(delayMs: number): void {
    this.es?.close()
    this.es = undefined
    clearTimeout(this.retryTimer)
    this.retryTimer = setTimeout(() => this.open(), delayMs)
  }

  /** The browser stopped retrying: find out why before trying again. */
  private async recover(): Promise<void> {
    this.failures += 1
    this.es?.close()
    this.es = undefined
    let run: Run | undefined
    try {
      run = await this.opts.getRun(this.opts.runId)
    } catch (e) {
      const status = (e as { status?: number }).status
      if (status === 404 || status === 401) {
        this.close()
        this.opts.onGone()
        return
      }
    }
    if (this.stopped) return
    // A finished run whose events we still cannot read twice in a row: the log
    // expired (410) — the persisted messages are the truth now.
    if (run && TERMINAL_RUN.has(run.status) && this.failures >= 2) {
      this.close()
      this.opts.onGone()
      return
    }
    const delay = Math.min(15_000, 500 * 2 ** Math.min(this.failures - 1, 5))
    this.reopen(delay)
  }
}
