// The rules behind the bell (docs/schedules.md, "Notifications"), kept pure so they
// are tested without a browser: what the count says, when to look again, which
// unread entries are new since the page started looking, how many browser
// notifications a burst of them makes, whether the person asked for those, what
// kind of entry each is and where following it goes, and how long ago it came.

import type { Lang, MessageKey } from './i18n'
import { fmtDate } from './format'
import type { NotificationItem, NotificationKind } from './types'

/** How often the bell reads the unread count while the tab is shown. */
export const POLL_MS = 30_000

/** Entries the panel lists (newest first). */
export const PANEL_LIMIT = 50

/**
 * Unread entries a poll reads when browser notifications are on: enough to tell
 * each new one apart in a burst (the count alone needs one).
 */
export const ALERT_LOOKAHEAD = 20

/** Browser notifications shown one by one; past this, one more says how many others. */
export const MAX_ALERTS = 3

/** Each kind's tag in the panel (a record: a kind the server adds fails tsc until it has one). */
export const KIND_LABEL: Record<NotificationKind, MessageKey> = {
  schedule_finished: 'notif.kind.schedule_finished',
  schedule_waiting: 'notif.kind.schedule_waiting',
  channel_test: 'notif.kind.channel_test',
  run_waiting: 'notif.kind.run_waiting',
}

/**
 * Where following an entry goes: its run's conversation (a schedule's, or one of
 * the person's own that waits for them); a channel's test
 * message, which has none, to /channels, where its delivery shows; else nowhere.
 */
export function notificationHref(n: Pick<NotificationItem, 'kind' | 'session_id'>): string | null {
  if (n.session_id) return `/chat/${encodeURIComponent(n.session_id)}`
  return n.kind === 'channel_test' ? '/channels' : null
}

/** What the bell's badge says: nothing at 0, the number up to 99, then "99+". */
export function countLabel(unread: number): string {
  if (!Number.isFinite(unread) || unread < 1) return ''
  return unread > 99 ? '99+' : String(Math.floor(unread))
}

/**
 * The unread entries of `list` not in `seen`, newest first (as the list comes).
 * The caller adds every id it read to `seen` afterwards, and fills `seen` once
 * without alerting, so what was there when the page began looking never alerts.
 */
export function freshUnread(seen: ReadonlySet<string>, list: readonly NotificationItem[]): NotificationItem[] {
  return list.filter((n) => !n.read_at && !seen.has(n.id))
}

/** What a burst of new entries shows in the browser: at most `max` of them, then one line for the rest. */
export interface AlertPlan {
  each: NotificationItem[]
  /** how many more came than are shown one by one (0: no summary) */
  more: number
}

export function planAlerts(fresh: readonly NotificationItem[], max = MAX_ALERTS): AlertPlan {
  return { each: fresh.slice(0, max), more: Math.max(0, fresh.length - max) }
}

/** Where the person stands on browser notifications. */
export type BrowserNotify = 'on' | 'off' | 'denied' | 'unsupported'

/** The localStorage key of the person's choice: `1` they asked for them, `0` (or nothing) not. */
export const NOTIFY_KEY = 'weft.notify'

/**
 * On only when they asked (`stored === '1'`) and the browser still allows it: a
 * permission taken back in the browser's settings turns it off here too.
 */
export function browserNotifyState(
  stored: string | null,
  permission: NotificationPermission | undefined,
): BrowserNotify {
  if (permission === undefined) return 'unsupported'
  if (permission === 'denied') return 'denied'
  return stored === '1' && permission === 'granted' ? 'on' : 'off'
}

/**
 * How long ago `iso` was, in words ("now", "5 minutes ago", "yesterday"); a date
 * past a week.
 */
export function timeAgo(iso: string, lang: Lang, now = Date.now()): string {
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return iso
  const rtf = new Intl.RelativeTimeFormat(lang === 'zh' ? 'zh-CN' : 'en', { numeric: 'auto' })
  const s = Math.max(0, Math.round((now - ms) / 1000))
  if (s < 45) return rtf.format(0, 'second')
  const m = Math.round(s / 60)
  if (m < 60) return rtf.format(-m, 'minute')
  const h = Math.round(m / 60)
  if (h < 24) return rtf.format(-h, 'hour')
  const d = Math.round(h / 24)
  if (d < 7) return rtf.format(-d, 'day')
  return fmtDate(iso, lang)
}
