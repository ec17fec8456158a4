// The rules behind the /memory page (docs/memory.md), kept pure so they are tested
// without a browser: the three kinds, their words and counts, what a memory's text
// must be before it is sent, where a saved memory goes in the list (the profile
// first, then the server's order: pinned, then the most recently changed — but a
// search's ranking is left alone), where a memory came from, the typed confirmation of "forget
// everything" and the export's file.

import type { MessageKey } from './i18n'
import type { Memory, MemoryKind, MemoryList, MemorySource } from './types'

/** Each kind's words: its tab, its name, what it is for and an example to start from. */
export const KIND_TEXT: Record<MemoryKind, Record<'tab' | 'name' | 'about' | 'placeholder', MessageKey>> = {
  fact: { tab: 'memory.tab.fact', name: 'memory.kind.fact', about: 'memory.about.fact', placeholder: 'memory.placeholder.fact' },
  episode: {
    tab: 'memory.tab.episode',
    name: 'memory.kind.episode',
    about: 'memory.about.episode',
    placeholder: 'memory.placeholder.episode',
  },
  procedure: {
    tab: 'memory.tab.procedure',
    name: 'memory.kind.procedure',
    about: 'memory.about.procedure',
    placeholder: 'memory.placeholder.procedure',
  },
}

/** The tabs, in order: a kind the API gains fails `tsc` in `KIND_TEXT` until it has its words. */
export const MEMORY_KINDS = Object.keys(KIND_TEXT) as readonly MemoryKind[]

/** The server's bound for a memory's text (`MAX_MEMORY_CHARS` in `shared`). */
export const MAX_MEMORY_CHARS = 2000

/** `?kind=` of the page's URL, or the first tab when it names no kind. */
export function kindFromParam(value: string | null): MemoryKind {
  return value !== null && Object.hasOwn(KIND_TEXT, value) ? (value as MemoryKind) : MEMORY_KINDS[0]
}

/**
 * A text's length as the server measures it: trimmed, in Unicode scalar values
 * (not UTF-16 units), so "记忆" is 2 and an emoji is 1.
 */
export function memoryChars(text: string): number {
  return [...text.trim()].length
}

export type MemoryTextCheck = 'ok' | 'empty' | 'too_long'

/** What the page can tell before sending; secrets only the server recognises (its 422). */
export function checkMemoryText(text: string): MemoryTextCheck {
  const n = memoryChars(text)
  if (n === 0) return 'empty'
  if (n > MAX_MEMORY_CHARS) return 'too_long'
  return 'ok'
}

export function countByKind(memories: readonly Memory[]): Record<MemoryKind, number> {
  const counts = { fact: 0, episode: 0, procedure: 0 } satisfies Record<MemoryKind, number>
  for (const m of memories) counts[m.kind] += 1
  return counts
}

/** The memory is the person's profile (the one fact the background extraction keeps up to date). */
export const isProfile = (m: Memory): boolean => m.profile === true

/**
 * The page's order for a list without a search: the profile first, then the
 * server's order (pinned first, then the most recently changed).
 */
export function compareMemories(a: Memory, b: Memory): number {
  return (
    Number(isProfile(b)) - Number(isProfile(a)) ||
    Number(b.pinned) - Number(a.pinned) ||
    b.updated_at - a.updated_at ||
    (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
  )
}

/**
 * A list as the page shows it. The server lists the profile among the pinned
 * memories (a memory pinned after it comes before it); without a search the page
 * lifts it to the top, the rest in the server's order. A search's ranking stays.
 */
export function inPageOrder(list: readonly Memory[], ranked: boolean): Memory[] {
  return ranked ? [...list] : [...list.filter(isProfile), ...list.filter((m) => !isProfile(m))]
}

/**
 * The list once `saved` (added or changed) is in it. A list ranked by a search keeps
 * its order (a changed memory stays where it was, a new one goes first); otherwise
 * the memory moves where the page's order puts it (`compareMemories`).
 */
export function withSaved(list: readonly Memory[], saved: Memory, ranked: boolean): Memory[] {
  const at = list.findIndex((m) => m.id === saved.id)
  if (ranked) return at < 0 ? [saved, ...list] : list.map((m, i) => (i === at ? saved : m))
  return [...list.filter((m) => m.id !== saved.id), saved].sort(compareMemories)
}

export function withoutMemory(list: readonly Memory[], id: string): Memory[] {
  return list.filter((m) => m.id !== id)
}

/** Where a memory came from: a conversation (its page) or added by hand. */
export type MemoryOrigin = { type: 'manual' } | { type: 'conversation'; href: string }

export function memoryOrigin(source: MemorySource): MemoryOrigin {
  if (source.type === 'manual') return { type: 'manual' }
  return { type: 'conversation', href: `/chat/${encodeURIComponent(source.session_id)}` }
}

/** The memory was changed after it was made (an edit or a pin). */
export function wasEdited(m: Memory): boolean {
  return m.updated_at > m.created_at
}

/**
 * "Forget everything" goes ahead only once the person typed the phrase they were
 * shown (case, surrounding and repeated spaces aside).
 */
export function forgetConfirmed(typed: string, phrase: string): boolean {
  const norm = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase()
  return norm(phrase) !== '' && norm(typed) === norm(phrase)
}

/** The export as a file to save: `weft-memories-<local date>.json`, indented. */
export function exportFile(list: MemoryList, now: Date): { name: string; json: string } {
  const pad = (n: number) => String(n).padStart(2, '0')
  const day = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`
  return { name: `weft-memories-${day}.json`, json: `${JSON.stringify(list, null, 2)}\n` }
}
