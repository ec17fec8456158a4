// The bell's state (docs/schedules.md, "Notifications"): the unread count, read
// every POLL_MS while the tab is shown and again when the window comes back; the
// panel's list, read when it opens; marking read; and, when the person asked for
// them, one browser notification per new unread entry (`planAlerts`). One hook for
// the whole shell, so one poller whatever the layout shows.

import { useCallback, useEffect, useRef, useState } from 'react'
import { useNavigate } from 'react-router'
import { api } from '../api'
import { useT } from '../i18n'
import {
  ALERT_LOOKAHEAD,
  NOTIFY_KEY,
  PANEL_LIMIT,
  POLL_MS,
  browserNotifyState,
  freshUnread,
  notificationHref,
  planAlerts,
  type BrowserNotify,
} from '../notifications'
import type { NotificationItem } from '../types'
import { errText } from './useTurns'

const supported = () => typeof window !== 'undefined' && 'Notification' in window

function readChoice(): BrowserNotify {
  let stored: string | null = null
  try {
    stored = localStorage.getItem(NOTIFY_KEY)
  } catch {
    // storage refused (private mode): nothing was asked for
  }
  return browserNotifyState(stored, supported() ? Notification.permission : undefined)
}

function storeChoice(on: boolean) {
  try {
    localStorage.setItem(NOTIFY_KEY, on ? '1' : '0')
  } catch {
    // not remembered: it stays on for this page only
  }
}

export interface Notifications {
  unread: number
  /** the panel's list; null until read */
  items: NotificationItem[] | null
  error: string | null
  open: boolean
  setOpen: (open: boolean) => void
  /** Marks it read and goes where it is about (`notificationHref`), if anywhere. */
  follow: (n: NotificationItem) => void
  markAllRead: () => void
  browser: BrowserNotify
  setBrowser: (on: boolean) => Promise<void>
}

export function useNotifications(): Notifications {
  const t = useT()
  const nav = useNavigate()
  const [unread, setUnread] = useState(0)
  const [items, setItems] = useState<NotificationItem[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [open, setOpenState] = useState(false)
  const [browser, setBrowserState] = useState<BrowserNotify>(readChoice)

  // Read by the poller, which outlives renders.
  const openRef = useRef(open)
  const browserRef = useRef(browser)
  const seen = useRef(new Set<string>())
  // The first read with browser notifications on only learns what is there.
  const primed = useRef(false)
  const inFlight = useRef(false)
  const again = useRef(false)
  const followRef = useRef<(n: NotificationItem) => void>(() => {})
  const setOpenRef = useRef<(o: boolean) => void>(() => {})

  const alert = useCallback(
    (fresh: NotificationItem[]) => {
      const plan = planAlerts(fresh)
      try {
        for (const n of plan.each) {
          const shown = new Notification(n.title, { body: n.body, tag: `weft-${n.id}` })
          shown.onclick = () => {
            window.focus()
            followRef.current(n)
            shown.close()
          }
        }
        if (plan.more > 0) {
          const shown = new Notification(t('notif.more', { n: plan.more }), { tag: 'weft-more' })
          shown.onclick = () => {
            window.focus()
            setOpenRef.current(true)
            shown.close()
          }
        }
      } catch {
        // a browser that only notifies from a service worker (Android): the bell still counts
      }
    },
    [t],
  )

  /**
   * Reads the count (and the list, when the panel is open). One read at a time:
   * a call during one reads again after it, so an opened panel is never left empty.
   */
  const refresh = useCallback(async () => {
    if (inFlight.current) {
      again.current = true
      return
    }
    inFlight.current = true
    const listing = openRef.current
    const alerting = browserRef.current === 'on'
    try {
      const r = await api.notifications(
        listing ? { limit: PANEL_LIMIT } : { unread: true, limit: alerting ? ALERT_LOOKAHEAD : 1 },
      )
      setUnread(r.unread)
      if (listing) setItems(r.notifications)
      setError(null)
      const fresh = freshUnread(seen.current, r.notifications)
      for (const n of r.notifications) seen.current.add(n.id)
      if (alerting && browserRef.current === 'on') {
        if (primed.current) {
          if (fresh.length) alert(fresh)
        } else {
          primed.current = true
        }
      }
    } catch (e) {
      if (openRef.current) setError(errText(e))
    } finally {
      inFlight.current = false
      if (again.current) {
        again.current = false
        void refreshRef.current()
      }
    }
  }, [alert])
  const refreshRef = useRef(refresh)
  refreshRef.current = refresh

  const setOpen = useCallback(
    (o: boolean) => {
      openRef.current = o
      setOpenState(o)
      if (o) {
        setError(null)
        void refresh()
      }
    },
    [refresh],
  )
  setOpenRef.current = setOpen

  // Every POLL_MS while shown; at once when the window or tab comes back.
  useEffect(() => {
    const shown = () => document.visibilityState === 'visible'
    const tick = () => {
      if (shown()) void refresh()
    }
    tick()
    const h = setInterval(tick, POLL_MS)
    window.addEventListener('focus', tick)
    document.addEventListener('visibilitychange', tick)
    return () => {
      clearInterval(h)
      window.removeEventListener('focus', tick)
      document.removeEventListener('visibilitychange', tick)
    }
  }, [refresh])

  const markRead = useCallback(
    (ids?: string[]) => {
      const now = new Date().toISOString()
      setItems((cur) => cur?.map((n) => (!ids || ids.includes(n.id) ? { ...n, read_at: n.read_at ?? now } : n)) ?? null)
      setUnread((u) => (ids ? Math.max(0, u - ids.length) : 0))
      api
        .markNotificationsRead(ids)
        .then(() => refresh())
        .catch((e) => setError(errText(e)))
    },
    [refresh],
  )

  const follow = useCallback(
    (n: NotificationItem) => {
      if (!n.read_at) markRead([n.id])
      setOpen(false)
      const href = notificationHref(n)
      if (href) nav(href)
    },
    [markRead, nav, setOpen],
  )
  followRef.current = follow

  const setBrowser = useCallback(
    async (on: boolean) => {
      let next: BrowserNotify = 'off'
      if (on && supported()) {
        const permission =
          Notification.permission === 'default' ? await Notification.requestPermission() : Notification.permission
        next = permission === 'granted' ? 'on' : permission === 'denied' ? 'denied' : 'off'
      } else if (!supported()) {
        next = 'unsupported'
      }
      storeChoice(next === 'on')
      browserRef.current = next
      setBrowserState(next)
      // What is unread now was there before they asked: learn it without alerting.
      if (next === 'on') {
        primed.current = false
        void refresh()
      }
    },
    [refresh],
  )

  return {
    unread,
    items,
    error,
    open,
    setOpen,
    follow,
    markAllRead: () => markRead(),
    browser,
    setBrowser,
  }
}
