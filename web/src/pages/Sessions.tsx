// /sessions: conversation history with title search, rename and delete.

import { useCallback, useEffect, useRef, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { sessionsChanged } from '../events'
import { fmtDate } from '../format'
import { useI18n } from '../i18n'
import type { Session } from '../types'

const LIMIT = 30

export function SessionsPage() {
  const { t, lang } = useI18n()
  const [q, setQ] = useState('')
  const [query, setQuery] = useState('')
  const [sessions, setSessions] = useState<Session[]>([])
  const [next, setNext] = useState<string | null>(null)
  const [loading, setLoading] = useState(true)
  const [error, setError] = useState<string | null>(null)
  const [editing, setEditing] = useState<string | null>(null)
  const [draft, setDraft] = useState('')
  const seqRef = useRef(0)

  // Debounce typing into the query actually sent.
  useEffect(() => {
    const h = setTimeout(() => setQuery(q.trim()), 250)
    return () => clearTimeout(h)
  }, [q])

  const load = useCallback(async (search: string, cursor: string | null) => {
    const mySeq = ++seqRef.current
    setLoading(true)
    setError(null)
    try {
      const r = await api.listSessions({ q: search, limit: LIMIT, cursor })
      if (mySeq !== seqRef.current) return // a newer search answered first
      setSessions((cur) => (cursor ? [...cur, ...r.sessions] : r.sessions))
      setNext(r.next_cursor ?? null)
    } catch (e) {
      if (mySeq === seqRef.current) setError(e instanceof Error ? e.message : String(e))
    } finally {
      if (mySeq === seqRef.current) setLoading(false)
    }
  }, [])

  useEffect(() => {
    void load(query, null)
  }, [query, load])

  async function saveTitle(s: Session) {
    const title = draft.trim()
    setEditing(null)
    if (!title || title === s.title) return
    try {
      const updated = await api.updateSession(s.id, { title })
      setSessions((cur) => cur.map((x) => (x.id === s.id ? { ...x, ...updated, title: updated?.title ?? title } : x)))
      sessionsChanged()
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
    }
  }

  async function remove(s: Session) {
    if (!window.confirm(t('sessions.confirmDelete', { title: s.title || t('chat.untitled') }))) return
    try {
      await api.deleteSession(s.id)
      setSessions((cur) => cur.filter((x) => x.id !== s.id))
      sessionsChanged()
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
    }
  }

  return (
    <div className="page">
      <h1>{t('sessions.title')}</h1>
      <input
        type="search"
        className="search"
        placeholder={t('sessions.search')}
        aria-label={t('sessions.search')}
        data-testid="session-search"
        value={q}
        onChange={(e) => setQ(e.target.value)}
      />
      {error && (
        <p className="notice error" role="alert">
          {t('common.error', { message: error })}
        </p>
      )}
      <ul className="session-list" data-testid="session-list" aria-busy={loading}>
        {sessions.map((s) => (
          <li key={s.id} className="session-row" data-testid="session-row">
            {editing === s.id ? (
              <form
                className="rename"
                onSubmit={(e) => {
                  e.preventDefault()
                  void saveTitle(s)
                }}
              >
                <input
                  autoFocus
                  value={draft}
                  aria-label={t('sessions.rename')}
                  data-testid="rename-input"
                  onChange={(e) => setDraft(e.target.value)}
                  onKeyDown={(e) => e.key === 'Escape' && setEditing(null)}
                />
                <button className="btn primary small" type="submit">
                  {t('sessions.save')}
                </button>
                <button className="btn ghost small" type="button" onClick={() => setEditing(null)}>
                  {t('sessions.cancel')}
                </button>
              </form>
            ) : (
              <>
                <Link to={`/chat/${s.id}`} className="session-link">
                  <span className="session-title" data-testid="session-title">
                    {s.active_run_id && <span className="dot live" aria-label={t('sessions.active')} />}
                    {s.title || t('chat.untitled')}
                  </span>
                  <span className="muted small">
                    {t('sessions.updated', { when: fmtDate(s.updated_at, lang) })}
                    {s.model ? ` · ${s.model}` : ''}
                    {s.source === 'lark' || s.source === 'cli' ? ` · ${s.source}` : ''}
                  </span>
                </Link>
                <div className="row-actions">
                  <button
                    className="btn ghost small"
                    data-testid="rename"
                    onClick={() => {
                      setEditing(s.id)
                      setDraft(s.title ?? '')
                    }}
                  >
                    {t('sessions.rename')}
                  </button>
                  <button className="btn ghost small danger-text" data-testid="delete" onClick={() => remove(s)}>
                    {t('sessions.delete')}
                  </button>
                </div>
              </>
            )}
          </li>
        ))}
      </ul>
      {!loading && !sessions.length && !error && (
        <p className="muted" data-testid="sessions-empty">
          {query ? t('sessions.noMatch', { q: query }) : t('sessions.none')}
        </p>
      )}
      {loading && <p className="muted">{t('chat.loading')}</p>}
      {next && !loading && (
        <button className="btn" onClick={() => load(query, next)}>
          {t('sessions.more')}
        </button>
      )}
    </div>
  )
}
