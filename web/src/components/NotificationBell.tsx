// The bell in the shell's header and its panel: the unread count on the button;
// the panel lists the newest entries (a scheduled run that ended or waits for
// you, a conversation of yours that waits for you, a test message sent to a
// channel), each tagged with its kind and opening its conversation (a test, the
// channels page), with "Mark all read" and the switch for browser notifications.
// The panel is a non-modal dialog: it takes focus when it opens, Escape or a
// click outside closes it, and focus goes back to the bell.

import { useEffect, useId, useRef } from 'react'
import { useI18n } from '../i18n'
import { KIND_LABEL, countLabel, timeAgo } from '../notifications'
import type { Notifications } from '../pages/useNotifications'
import { ErrorLine } from './Section'
import { Icon } from './Icon'

export function NotificationBell({ n }: { n: Notifications }) {
  const { t, lang } = useI18n()
  const id = useId()
  const panelId = `${id}-panel`
  const headId = `${id}-head`
  const bell = useRef<HTMLButtonElement>(null)
  const panel = useRef<HTMLDivElement>(null)
  const { open, setOpen } = n
  const label = countLabel(n.unread)

  // Opened: focus moves into the panel. Escape or a click outside closes it.
  useEffect(() => {
    if (!open) return
    panel.current?.focus()
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return
      e.stopPropagation()
      setOpen(false)
      bell.current?.focus()
    }
    const onDown = (e: PointerEvent) => {
      const target = e.target as Node
      if (panel.current?.contains(target) || bell.current?.contains(target)) return
      setOpen(false)
    }
    window.addEventListener('keydown', onKey)
    document.addEventListener('pointerdown', onDown)
    return () => {
      window.removeEventListener('keydown', onKey)
      document.removeEventListener('pointerdown', onDown)
    }
  }, [open, setOpen])

  const now = Date.now()

  return (
    <div className="notif">
      <button
        ref={bell}
        className="btn icon ghost notif-bell"
        aria-label={n.unread > 0 ? t('notif.bellUnread', { n: n.unread }) : t('notif.title')}
        aria-expanded={open}
        aria-controls={panelId}
        aria-haspopup="dialog"
        onClick={() => setOpen(!open)}
        data-testid="notif-bell"
      >
        <Icon name="bell" size={20} />
        {label && (
          <span className="notif-count" aria-hidden="true" data-testid="notif-count">
            {label}
          </span>
        )}
      </button>
      {open && (
        <div
          ref={panel}
          id={panelId}
          className="notif-panel"
          role="dialog"
          aria-labelledby={headId}
          tabIndex={-1}
          data-testid="notif-panel"
        >
          <div className="notif-head">
            <h2 id={headId}>{t('notif.title')}</h2>
            <button
              className="btn ghost small"
              onClick={n.markAllRead}
              disabled={n.unread === 0}
              data-testid="notif-mark-all"
            >
              {t('notif.markAll')}
            </button>
          </div>
          <ErrorLine error={n.error} />
          {n.items === null ? (
            !n.error && <p className="muted notif-empty">{t('chat.loading')}</p>
          ) : n.items.length === 0 ? (
            <p className="muted notif-empty" data-testid="notif-none">
              {t('notif.none')}
            </p>
          ) : (
            <ul className="notif-list">
              {n.items.map((item) => (
                <li key={item.id}>
                  <button
                    className={`notif-item ${item.read_at ? '' : 'unread'}`}
                    onClick={() => n.follow(item)}
                    data-testid="notif-item"
                    data-id={item.id}
                    data-unread={item.read_at ? 'false' : 'true'}
                    data-kind={item.kind}
                  >
                    <span className="notif-dot" aria-hidden="true" />
                    {!item.read_at && <span className="sr-only">{t('notif.unread')}: </span>}
                    <span className="notif-title" data-testid="notif-title">
                      {item.title}
                    </span>
                    <span className="notif-body" data-testid="notif-body">
                      {item.body}
                    </span>
                    <span className={`notif-kind kind-${item.kind}`} data-testid="notif-kind">
                      {t(KIND_LABEL[item.kind])}
                    </span>
                    <time className="notif-time muted small" dateTime={item.created_at} title={new Date(item.created_at).toLocaleString(lang === 'zh' ? 'zh-CN' : 'en')}>
                      {timeAgo(item.created_at, lang, now)}
                    </time>
                  </button>
                </li>
              ))}
            </ul>
          )}
          <BrowserSwitch n={n} />
        </div>
      )}
    </div>
  )
}

function BrowserSwitch({ n }: { n: Notifications }) {
  const { t } = useI18n()
  if (n.browser === 'unsupported') return null
  return (
    <div className="notif-foot">
      <label>
        <input
          type="checkbox"
          checked={n.browser === 'on'}
          disabled={n.browser === 'denied'}
          onChange={(e) => void n.setBrowser(e.target.checked)}
          data-testid="notif-browser"
        />
        {t('notif.browser')}
      </label>
      {n.browser === 'denied' && <p className="muted small">{t('notif.browserDenied')}</p>}
    </div>
  )
}
