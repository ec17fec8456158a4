// The chat's turn actions — undo, redo, regenerate, edit, choosing an alternative
// reply, compact — and what they read back: the newest turn's alternatives and the
// stored summary of older turns. Every action is refused by the server (409
// `run_active`) while a run is active; the page disables the buttons then, and
// shows the server's message when one is refused anyway.

import { useEffect, useRef, useState } from 'react'
import { ApiError, api } from '../api'
import { altNav, type AltNav } from '../turns'
import type { Alternative, Message, Summary, TurnResult } from '../types'

export const errText = (e: unknown) =>
  e instanceof ApiError && e.status === 429 && e.retryAfter
    ? `${e.message} (${e.retryAfter}s)`
    : e instanceof Error
      ? e.message
      : String(e)

export interface TurnsInput {
  sessionId?: string
  /** a run is active here: nothing is read or done meanwhile */
  running: boolean
  loaded: boolean
  /** what is shown; alternatives and the summary are read again when it changes */
  messages: Message[]
  /** the run of the newest turn's reply on screen */
  turnRun: string | null
  /** reads the conversation again after an action; `started`: the run it began */
  reload: (started?: string) => Promise<void>
  /** a run began (regenerate, edit) */
  onStarted: (runId: string) => void
}

/** Why the last action was not done: `refused` when the server said no (409), else it failed. */
export interface TurnError {
  message: string
  refused: boolean
}

export interface Turns {
  /** an action is under way */
  busy: boolean
  /** the "‹ 2/3 ›" switch for the newest reply, if it has alternatives */
  nav: AltNav | null
  summary: Summary | null
  /** Compact was asked for; the next reply summarises first */
  compactAsked: boolean
  error: TurnError | null
  clearError: () => void
  undo: () => void
  redo: () => void
  regenerate: () => void
  edit: (text: string) => Promise<boolean>
  choose: (runId: string) => void
  compact: () => void
}

export function useTurns(p: TurnsInput): Turns {
  const [busy, setBusy] = useState(false)
  const [alternatives, setAlternatives] = useState<Alternative[]>([])
  const [summary, setSummary] = useState<Summary | null>(null)
  const [compactAsked, setCompactAsked] = useState(false)
  const [error, setError] = useState<TurnError | null>(null)
  const fail = (e: unknown) => setError({ message: errText(e), refused: e instanceof ApiError && e.status === 409 })
  const { sessionId, running, loaded, messages, turnRun } = p

  // Once a reply has run, the compaction asked for has happened.
  const wasRunning = useRef(running)
  useEffect(() => {
    if (wasRunning.current && !running) setCompactAsked(false)
    wasRunning.current = running
  }, [running])

  useEffect(() => {
    if (!sessionId || running || !loaded) return
    let live = true
    if (turnRun)
      api
        .alternatives(sessionId)
        .then((a) => live && setAlternatives(a))
        .catch(() => {})
    else setAlternatives([])
    api
      .summary(sessionId)
      .then((s) => live && setSummary(s))
      .catch(() => {})
    return () => {
      live = false
    }
  }, [sessionId, running, loaded, turnRun, messages])

  async function act(op: (sid: string) => Promise<TurnResult | void>, starts: boolean): Promise<boolean> {
    if (!sessionId || busy) return false
    setBusy(true)
    setError(null)
    try {
      const r = await op(sessionId)
      const started = starts && r ? r.run_id : undefined
      if (started) p.onStarted(started)
      await p.reload(started)
      return true
    } catch (e) {
      fail(e)
      return false
    } finally {
      setBusy(false)
    }
  }

  return {
    busy,
    nav: running ? null : altNav(alternatives, turnRun),
    summary,
    compactAsked,
    error,
    clearError: () => setError(null),
    undo: () => void act(api.undo, false),
    redo: () => void act(api.redo, false),
    regenerate: () => void act(api.regenerate, true),
    edit: (text) => act((sid) => api.editLast(sid, text), true),
    choose: (runId) => void act((sid) => api.chooseAlternative(sid, runId), false),
    compact: () => {
      if (!sessionId) return
      setError(null)
      api
        .compact(sessionId)
        .then(() => setCompactAsked(true))
        .catch(fail)
    },
  }
}
