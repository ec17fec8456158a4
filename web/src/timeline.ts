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

/** Adds the messages of `page` that `existing` lacks, keeping order (see `adoptAttachments`). */
export function mergeMessages(existing: Message[], page: Message[]): Message[] {
  const known = adoptAttachments(existing, page)
  const ids = new Set(known.map((m) => m.id))
  const fresh = page.filter((m) => !ids.has(m.id))
  return fresh.length ? [...known, ...fresh] : known
}

/**
 * A message this tab sent is shown before the server has listed its files (their
 * ids are not in the send's answer): takes them from `page` once it has them.
 * Nothing else of a shown message changes; `existing` is returned when nothing did.
 */
export function adoptAttachments(existing: Message[], page: Message[]): Message[] {
  const listed = new Map(page.filter((m) => m.attachments?.length).map((m) => [m.id, m.attachments]))
  if (!listed.size) return existing
  let changed = false
  const out = existing.map((m) => {
    const files = listed.get(m.id)
    if (!files || m.attachments?.length) return m
    changed = true
    return { ...m, attachments: files }
  })
  return changed ? out : existing
}
