// The sources an answer cites (docs/knowledge.md, "Sources"): which `[n]` of a
// reply's text are footnotes, the list a stored reply carries, and how the source
// panel reads a document on from the passage it opened at. Pure and unit-tested
// (`citations.test.ts`); the Markdown side is `components/citeRefs.ts`, the views
// `components/Sources.tsx` and `components/SourcePanel.tsx`.
//
// The worker decides what the answer cites and sends only those numbers; a number
// it left out (no search gave it, or its document was deleted) stays plain text
// here too, so a footnote never opens nothing.

import type { Citation, DocumentChunk, Message } from './types'

/** A piece of text, or the number of a cited source standing where `[n]` was. */
export type CitePart = string | number

// `[1]`, `[12]` and `[1, 2]`; `[1][2]` is two matches side by side.
const CITE = /\[(\d{1,4}(?:[ \t]*,[ \t]*\d{1,4})*)\]/g

/**
 * Splits `text` at every `[n]` / `[n, m]` whose numbers are cited; a number that is
 * not cited keeps its brackets as text. One string (`[text]`) when nothing is cited.
 */
export function splitCitations(text: string, cited: ReadonlySet<number>): CitePart[] {
  const out: CitePart[] = []
  let plain = ''
  let last = 0
  for (const m of text.matchAll(CITE)) {
    const ns = m[1].split(',').map((x) => Number(x.trim()))
    if (!ns.some((n) => cited.has(n))) continue
    plain += text.slice(last, m.index)
    last = m.index + m[0].length
    for (const n of ns) {
      if (cited.has(n)) {
        if (plain) out.push(plain)
        plain = ''
        out.push(n)
      } else {
        plain += `[${n}]`
      }
    }
  }
  plain += text.slice(last)
  if (plain || !out.length) out.push(plain)
  return out
}

/**
 * The sources of a stored reply: the `citations` of its assistant messages (the
 * final answer carries them), each number once, in the order they came.
 */
export function replyCitations(messages: readonly Message[]): Citation[] {
  const seen = new Set<number>()
  const out: Citation[] = []
  for (const m of messages) {
    if (m.role !== 'assistant') continue
    for (const c of m.citations ?? []) {
      if (seen.has(c.n)) continue
      seen.add(c.n)
      out.push(c)
    }
  }
  return out
}

/** The chunks before `firstOrd`, at most `limit` of them, as the chunks endpoint's query. */
export function earlierWindow(firstOrd: number, limit: number): { after?: number; limit: number } | null {
  if (firstOrd <= 0) return null
  const count = Math.min(limit, firstOrd)
  const after = firstOrd - count - 1
  // `after` = -1 is "from the start", which is also what no `after` means.
  return after < 0 ? { limit: count } : { after, limit: count }
}

/** `have` with `page` added: every chunk once, in document order. */
export function mergeChunks(have: readonly DocumentChunk[], page: readonly DocumentChunk[]): DocumentChunk[] {
  const byOrd = new Map<number, DocumentChunk>()
  for (const c of have) byOrd.set(c.ord, c)
  for (const c of page) byOrd.set(c.ord, c)
  return [...byOrd.values()].sort((a, b) => a.ord - b.ord)
}

/**
 * The place to show above chunk `c` of the panel: its position when it differs
 * from the chunk before's, unless the text starts with its own heading (a Markdown
 * section shows its heading itself; a PDF's page does not).
 */
export function placeLabel(c: DocumentChunk, prev: DocumentChunk | undefined): string | null {
  if (!c.position || c.position === prev?.position) return null
  return /^\s*#/.test(c.text) ? null : c.position
}
