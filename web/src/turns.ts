// The rules behind the chat's turn actions (undo, redo, regenerate, edit and the
// newest turn's alternative replies), kept pure so they are unit-tested; the chat
// page only wires them to buttons.

import type { TimelineItem } from './timeline'
import type { Alternative } from './types'

/** Where the shown reply sits among the newest turn's replies, and its neighbours. */
export interface AltNav {
  /** 1-based position of the shown reply */
  position: number
  total: number
  /** run id to show for ‹ (none at the first) */
  prev: string | null
  /** run id to show for › (none at the last) */
  next: string | null
}

/**
 * The "‹ 2/3 ›" switcher, or null when there is nothing to switch between: fewer
 * than two replies, or the shown reply is not among them (it failed, or a newer
 * run has not finished).
 */
export function altNav(alternatives: readonly Alternative[], shownRunId?: string | null): AltNav | null {
  if (alternatives.length < 2) return null
  const sorted = [...alternatives].sort((a, b) => a.created_at.localeCompare(b.created_at))
  const i = sorted.findIndex((a) => (shownRunId ? a.run_id === shownRunId : a.shown))
  if (i < 0 || (shownRunId && !sorted[i].shown)) return null
  return {
    position: i + 1,
    total: sorted.length,
    prev: i > 0 ? sorted[i - 1].run_id : null,
    next: i < sorted.length - 1 ? sorted[i + 1].run_id : null,
  }
}

/** Where the newest turn is in the timeline: its last user message and its reply. */
export interface LastTurn {
  /** index of the newest user message */
  user: number
  /** index of the reply after it (live or from history), if any */
  reply: number
  /** that reply's run */
  runId: string | null
}

export function lastTurn(items: readonly TimelineItem[]): LastTurn | null {
  let user = -1
  for (let i = items.length - 1; i >= 0; i--) {
    if (items[i].kind === 'user') {
      user = i
      break
    }
  }
  if (user < 0) return null
  let reply = -1
  for (let i = items.length - 1; i > user; i--) {
    if (items[i].kind !== 'user') {
      reply = i
      break
    }
  }
  const it = reply >= 0 ? items[reply] : null
  return { user, reply, runId: it && it.kind !== 'user' ? it.runId : null }
}
