// The shell shared by every signed-in page: a sidebar (new chat, recent
// conversations, navigation, language, sign-out) that folds into a drawer on
// narrow screens, and the notification bell — at the sidebar's head, or in the
// top bar where the sidebar is a drawer (one bell, so one poller).

import { useCallback, useEffect, useState } from 'react'
import { NavLink, Outlet, useLocation, useNavigate } from 'react-router'
import { api } from '../api'
import { useAuth } from '../auth'
import { onSessionsChanged } from '../events'
import { useT } from '../i18n'
import { LangSwitch } from '../components/LangSwitch'
import type { Session } from '../types'
import { Icon } from '../components/Icon'
import { NotificationBell } from '../components/NotificationBell'
import { useNotifications } from './useNotifications'

/** The width below which the sidebar is a drawer (styles.css says the same). */
const NARROW = '(max-width: 800px)'

function useNarrow(): boolean {
  const [narrow, setNarrow] = useState(() => window.matchMedia(NARROW).matches)
  useEffect(() => {
    const mq = window.matchMedia(NARROW)
    const on = () => setNarrow(mq.matches)
    mq.addEventListener('change', on)
    return () => mq.removeEventListener('change', on)
  }, [])
  return narrow
}

export function Layout() {
  const { user, signOut } = useAuth()
  const t = useT()
  const nav = useNavigate()
  const loc = useLocation()
  const [open, setOpen] = useState(false)
  const [recent, setRecent] = useState<Session[]>([])
  const notifications = useNotifications()
  const narrow = useNarrow()
  const bell = <NotificationBell n={notifications} />

  const loadRecent = useCallback(() => {
    api
      .listSessions({ limit: 20 })
      .then((r) => setRecent(r.sessions))
      .catch(() => {})
  }, [])

  useEffect(() => onSessionsChanged(loadRecent), [loadRecent])
  // Also refresh on every navigation: sessions change in other tabs and clients.
  useEffect(() => loadRecent(), [loadRecent, loc.pathname])

  // Close the drawer after navigating.
  useEffect(() => setOpen(false), [loc.pathname])

  useEffect(() => {
    if (!open) return
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && setOpen(false)
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [open])

  async function doSignOut() {
    await signOut()
    nav('/login', { replace: true })
  }

  return (
    <div className={`shell ${open ? 'drawer-open' : ''}`}>
      <a className="skip-link" href="#main">
        {t('nav.skip')}
      </a>
      <header className="topbar">
        <button
          className="btn icon"
          aria-label={t('nav.menu')}
          aria-expanded={open}
          aria-controls="sidebar"
          onClick={() => setOpen((o) => !o)}
        >
          <Icon name="menu" size={20} />
        </button>
        <span className="brand">
          <span className="logo" aria-hidden="true" /> {t('app.name')}
        </span>
        <span className="topbar-actions">
          {narrow && bell}
          <NavLink className="btn icon" to="/chat" aria-label={t('nav.newChat')}>
            <Icon name="plus" size={20} />
          </NavLink>
        </span>
      </header>
      <div className="scrim" onClick={() => setOpen(false)} aria-hidden="true" />
      <aside id="sidebar" className="sidebar" aria-label={t('nav.menu')}>
        <div className="side-brand">
          <span className="brand">
            <span className="logo" aria-hidden="true" /> {t('app.name')}
          </span>
          {!narrow && bell}
        </div>
        <NavLink to="/chat" end className="btn primary new-chat" data-testid="new-chat">
          <Icon name="plus" /> {t('nav.newChat')}
        </NavLink>
        <nav className="recent" aria-label={t('nav.recent')}>
          <h2>{t('nav.recent')}</h2>
          <ul>
            {recent.map((s) => (
              <li key={s.id}>
                <NavLink to={`/chat/${s.id}`} title={s.title || t('chat.untitled')}>
                  {s.active_run_id && <span className="dot live" aria-label={t('sessions.active')} />}
                  {s.title || t('chat.untitled')}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <nav className="side-nav">
          <NavLink to="/sessions" data-testid="nav-sessions">
            {t('nav.sessions')}
          </NavLink>
          <NavLink to="/knowledge" data-testid="nav-knowledge">
            {t('nav.knowledge')}
          </NavLink>
          <NavLink to="/memory" data-testid="nav-memory">
            {t('nav.memory')}
          </NavLink>
          <NavLink to="/schedules" data-testid="nav-schedules">
            {t('nav.schedules')}
          </NavLink>
          <NavLink to="/channels" data-testid="nav-channels">
            {t('nav.channels')}
          </NavLink>
          <NavLink to="/settings" data-testid="nav-settings">
            {t('nav.settings')}
          </NavLink>
        </nav>
        <div className="side-foot">
          <LangSwitch />
          <div className="whoami">
            <span className="avatar" aria-hidden="true">
              {user?.username.slice(0, 1).toUpperCase()}
            </span>
            <span className="name">{user?.username}</span>
            <button className="btn ghost small" onClick={doSignOut} data-testid="sign-out">
              {t('nav.signOut')}
            </button>
          </div>
        </div>
      </aside>
      <main id="main" className="main" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  )
}
