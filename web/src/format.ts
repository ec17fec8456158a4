// Small display helpers shared by the pages.

import type { Lang } from './i18n'

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  const m = Math.floor(ms / 60_000)
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${+(n / 1024).toFixed(1)} KiB`
  if (n < 1024 * 1024 * 1024) return `${+(n / 1024 / 1024).toFixed(1)} MiB`
  return `${+(n / 1024 / 1024 / 1024).toFixed(1)} GiB`
}

export function fmtNum(n: number | undefined): string {
  return n === undefined ? '–' : n.toLocaleString()
}

export function fmtDate(iso: string | null | undefined, lang: Lang): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  const loc = lang === 'zh' ? 'zh-CN' : 'en'
  const now = new Date()
  const sameDay = d.toDateString() === now.toDateString()
  return sameDay
    ? d.toLocaleTimeString(loc, { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(loc, { year: d.getFullYear() === now.getFullYear() ? undefined : 'numeric', month: 'short', day: 'numeric' })
}

export function titleFrom(text: string): string {
  const line = text.split('\n').map((l) => l.trim()).find((l) => l.length > 0) ?? ''
  return line.length > 60 ? `${line.slice(0, 57)}…` : line
}

/** Time left until a deadline, coarsely: `45 s`, `29 min`, `2 h 5 min`. */
export function fmtLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000))
  if (s < 60) return `${s} s`
  const m = Math.ceil(s / 60)
  if (m < 60) return `${m} min`
  const h = Math.floor(m / 60)
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`
}

/** How long a run has been going, in whole minutes (rounded down): `3 min`, `1 h`, `1 h 5 min`. */
export function fmtMinutes(ms: number): string {
  const m = Math.floor(Math.max(0, ms) / 60_000)
  if (m < 60) return `${m} min`
  const h = Math.floor(m / 60)
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`
}

/** A moment as a clock time (today) or date and time (another day). */
export function fmtClock(ms: number, lang: Lang, now = Date.now()): string {
  const d = new Date(ms)
  if (Number.isNaN(d.getTime())) return ''
  const loc = lang === 'zh' ? 'zh-CN' : 'en'
  const time = d.toLocaleTimeString(loc, { hour: '2-digit', minute: '2-digit' })
  if (d.toDateString() === new Date(now).toDateString()) return time
  return `${d.toLocaleDateString(loc, { month: 'short', day: 'numeric' })} ${time}`
}

/**
 * A text's tokens, estimated as the server does (`weft_llm::tokens::estimate`):
 * four ASCII characters, or one other character, per token, rounding up.
 */
export function estimateTokens(text: string): number {
  let ascii = 0
  let other = 0
  for (const c of text) {
    if (c.codePointAt(0)! < 128) ascii += 1
    else other += 1
  }
  return Math.ceil(ascii / 4) + other
}

/** A token count the way context windows are named: `999`, `1.5k`, `128k`, `1M`. */
export function fmtTokensShort(n: number): string {
  if (n < 1000) return String(Math.round(n))
  if (n < 1_000_000) return `${+(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`
  return `${+(n / 1_000_000).toFixed(n < 10_000_000 ? 1 : 0)}M`
}

/** How full the model's window was: `pct` of `window`, or only `tokens` when the window is unknown. */
export type ContextUse = { pct: string; window: string } | { tokens: string }

/**
 * `usage.context_tokens` of `usage.context_window`, for the reply footer; null when
 * the server did not measure it (older runs, no estimate).
 */
export function contextUse(tokens: number | undefined, window: number | undefined): ContextUse | null {
  if (!tokens || tokens <= 0) return null
  if (!window || window <= 0) return { tokens: fmtTokensShort(tokens) }
  const exact = (tokens / window) * 100
  // Never "0%" for a context that holds something, never "100%" for one that is not full.
  const pct = exact < 1 ? '<1%' : exact < 100 ? `${Math.min(99, Math.round(exact))}%` : `${Math.round(exact)}%`
  return { pct, window: fmtTokensShort(window) }
}
