// Orders what a conversation shows: persisted messages, grouped into replies per
// run, and the live runs, each placed after the user message that started it.
//
// A run that is live is rendered from its events only — its persisted (checkpointed)
// messages are left out — so a reply re-attached after a reload appears once.
//
// A question answered again (regenerate, edit, another alternative chosen) keeps the
// id of the run that first answered it, while the reply shown is another run's: the
// first run's place after the question then stays empty and is dropped in favour of
// the reply that follows it.

import type { Message } from './types'

export type TimelineItem =
  | { kind: 'user'; key: string; message: Message }
  | { kind: 'reply'; key: string; runId: string | null; messages: Message[] }
  | { kind: 'live'; key: string; runId: string }

export function buildTimeline(messages: Message[], liveRuns: readonly string[]): TimelineItem[] {
  const live = new Set(liveRuns)
  const lastUserOfRun = new Map<string, number>()
  messages.forEach((m, i) => {
    if (m.role === 'user' && m.run_id) lastUserOfRun.set(m.run_id, i)
  })

  const items: TimelineItem[] = []
  const groups = new Map<string, Extract<TimelineItem, { kind: 'reply' }>>()
  const placed = new Set<string>()
  let orphan: Extract<TimelineItem, { kind: 'reply' }> | null = null

  messages.forEach((m, i) => {
    if (m.role === 'user') {
      orphan = null
      items.push({ kind: 'user', key: m.id, message: m })
      const r = m.run_id
      if (r && lastUserOfRun.get(r) === i && !placed.has(r)) {
        placed.add(r)
        if (live.has(r)) {
          items.push({ kind: 'live', key: `live-${r}`, runId: r })
        } else {
          const g = { kind: 'reply' as const, key: `run-${r}`, runId: r, messages: [] }
          groups.set(r, g)
          items.push(g)
        }
      }
      return
    }
    const r = m.run_id
    if (r && live.has(r)) return
    if (r) {
      let g = groups.get(r)
      if (!g) {
        // A reply whose user message is on an earlier page (or absent).
        g = { kind: 'reply', key: `run-${r}`, runId: r, messages: [] }
        groups.set(r, g)
        placed.add(r)
        items.push(g)
      }
      g.messages.push(m)
      return
    }
    if (!orphan) {
      orphan = { kind: 'reply', key: `msg-${m.id}`, runId: null, messages: [] }
      items.push(orphan)
    }
    orphan.messages.push(m)
  })

  for (const r of liveRuns) {
    if (!placed.has(r)) {
      placed.add(r)
      items.push({ kind: 'live', key: `live-${r}`, runId: r })
    }
  }
  return items.filter((it, i) => {
    if (it.kind !== 'reply' || it.messages.length || !it.runId) return true
    const next = items[i + 1]
    return !next || next.kind === 'user'
  })
}

/** Adds the messages of `page` that `existing` lacks, keeping order. */
export function mergeMessages(existing: Message[], page: Message[]): Message[] {
  const ids = new Set(existing.map((m) => m.id))
  const fresh = page.filter((m) => !ids.has(m.id))
  return fresh.length ? [...existing, ...fresh] : existing
}
