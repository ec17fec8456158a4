// /schedules: prompts an agent runs on its own (docs/schedules.md). Each schedule
// shows its trigger in words, its next fire in its own timezone, whether it is on,
// the channels its notifications also go to (/channels), and how its newest fire
// went (with the conversation it went to); it can be run
// now, paused and resumed, renamed, edited (`ScheduleEditor.tsx`), deleted, and
// its history opened (`ScheduleHistory.tsx`). The list is read again just after
// the soonest fire is due and while a fire's run is going (`refreshDelay`).

import { useCallback, useEffect, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { deliverNames } from '../channels'
import { KindTag } from '../components/Deliveries'
import { ScheduleEditor } from '../components/ScheduleEditor'
import { OutcomeBadge, ScheduleHistory, fireHref } from '../components/ScheduleHistory'
import { ErrorLine } from '../components/Section'
import { useI18n } from '../i18n'
import { fmtZoned, refreshDelay } from '../schedules'
import type { Agent, Channel, Fire, Schedule, Session } from '../types'
import { errText } from './useTurns'

export function SchedulesPage() {
  const { t } = useI18n()
  const [list, setList] = useState<Schedule[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [editing, setEditing] = useState<string | null>(null)
  const [agents, setAgents] = useState<Agent[]>([])
  const [sessions, setSessions] = useState<Session[]>([])
  const [channels, setChannels] = useState<Channel[]>([])

  const load = useCallback(
    () =>
      api
        .listSchedules()
        .then((l) => {
          setList(l)
          setError(null)
        })
        .catch((e) => setError(errText(e))),
    [],
  )

  useEffect(() => {
    void load()
    api
      .agents()
      .then(setAgents)
      .catch(() => {})
    api
      .listSessions({ limit: 50 })
      .then((r) => setSessions(r.sessions))
      .catch(() => {})
    api
      .listChannels()
      .then(setChannels)
      .catch(() => {})
  }, [load])

  // Read again just after the soonest fire, and while a fire's run is going.
  useEffect(() => {
    if (!list) return
    const h = setTimeout(() => void load(), refreshDelay(list, Date.now()))
    return () => clearTimeout(h)
  }, [list, load])

  const saved = (s: Schedule) => {
    setList((cur) => (cur?.some((x) => x.id === s.id) ? cur.map((x) => (x.id === s.id ? s : x)) : [...(cur ?? []), s]))
    setEditing(null)
  }
  const removed = (id: string) => setList((cur) => cur?.filter((x) => x.id !== id) ?? null)

  const editorProps = { agents, sessions, channels, onSaved: saved, onCancel: () => setEditing(null) }

  return (
    <div className="page schedules">
      <h1>{t('schedules.title')}</h1>
      <p className="muted">{t('schedules.hint')}</p>
      {editing === 'new' ? (
        <ScheduleEditor {...editorProps} />
      ) : (
        <button className="btn primary" onClick={() => setEditing('new')} data-testid="schedule-new">
          {t('schedules.new')}
        </button>
      )}
      <ErrorLine error={error} />
      {list === null ? (
        !error && <p className="muted">{t('chat.loading')}</p>
      ) : list.length === 0 ? (
        <p className="muted" data-testid="schedules-none">
          {t('schedules.none')}
        </p>
      ) : (
        <ul className="schedule-list" data-testid="schedule-list">
          {list.map((s) =>
            editing === s.id ? (
              <li key={s.id} className="schedule-row editing" data-testid="schedule" data-id={s.id}>
                <ScheduleEditor {...editorProps} schedule={s} />
              </li>
            ) : (
              <ScheduleRow
                key={s.id}
                schedule={s}
                channels={channels}
                onChanged={saved}
                onRemoved={removed}
                onEdit={() => setEditing(s.id)}
                onFired={() => void load()}
              />
            ),
          )}
        </ul>
      )}
    </div>
  )
}

function ScheduleRow(p: {
  schedule: Schedule
  channels: Channel[]
  onChanged: (s: Schedule) => void
  onRemoved: (id: string) => void
  onEdit: () => void
  onFired: () => void
}) {
  const { t, lang } = useI18n()
  const s = p.schedule
  const [renaming, setRenaming] = useState<string | null>(null)
  const [history, setHistory] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [ran, setRan] = useState<Fire | null>(null)

  async function act(fn: () => Promise<void>) {
    setBusy(true)
    setError(null)
    try {
      await fn()
    } catch (e) {
      setError(errText(e))
    } finally {
      setBusy(false)
    }
  }

  const toggle = () => act(async () => p.onChanged(await api.updateSchedule(s.id, { enabled: !s.enabled })))
  const runNow = () =>
    act(async () => {
      setRan(await api.runSchedule(s.id))
      p.onFired()
    })
  const remove = () => {
    if (!window.confirm(t('schedules.confirmDelete', { name: s.name }))) return
    void act(async () => {
      await api.deleteSchedule(s.id)
      p.onRemoved(s.id)
    })
  }
  const rename = (name: string) =>
    act(async () => {
      if (name.trim() && name.trim() !== s.name) p.onChanged(await api.updateSchedule(s.id, { name: name.trim() }))
      setRenaming(null)
    })

  const last = s.last_fire
  const deliver = deliverNames(s.deliver ?? [], p.channels)
  return (
    <li
      className={`schedule-row ${s.enabled ? '' : 'paused'}`}
      data-testid="schedule"
      data-id={s.id}
      data-enabled={s.enabled}
    >
      <div className="schedule-head">
        {renaming !== null ? (
          <form
            className="rename"
            onSubmit={(e) => {
              e.preventDefault()
              void rename(renaming)
            }}
          >
            <input
              autoFocus
              value={renaming}
              maxLength={200}
              aria-label={t('schedules.rename')}
              onChange={(e) => setRenaming(e.target.value)}
              onKeyDown={(e) => e.key === 'Escape' && setRenaming(null)}
              data-testid="schedule-rename-input"
            />
            <button className="btn primary small" type="submit" disabled={busy} data-testid="schedule-rename-save">
              {t('sessions.save')}
            </button>
            <button className="btn ghost small" type="button" onClick={() => setRenaming(null)}>
              {t('sessions.cancel')}
            </button>
          </form>
        ) : (
          <h2 className="schedule-name" data-testid="schedule-name-text">
            {s.name}
          </h2>
        )}
        <span className={`badge ${s.enabled ? 'schedule-on' : 'schedule-off'}`} data-testid="schedule-state">
          {s.enabled ? t('schedules.on') : t('schedules.paused')}
        </span>
      </div>
      <p className="schedule-describe" data-testid="schedule-describe">
        {s.describe}
      </p>
      {deliver.length > 0 && (
        <p className="schedule-deliver small" data-testid="schedule-deliver">
          <span className="muted">{t('schedules.deliversTo')}</span>
          {deliver.map((c) => (
            <span key={c.id} className="deliver-chip" data-testid="schedule-deliver-channel" data-id={c.id}>
              {c.kind && <KindTag kind={c.kind} />}
              {c.name}
            </span>
          ))}
        </p>
      )}
      <p className="schedule-meta muted small">
        <span data-testid="schedule-next">
          {s.next_fire_at
            ? t('schedules.next', { when: fmtZoned(s.next_fire_at, lang), tz: s.timezone })
            : s.enabled
              ? t('schedules.noMore')
              : t('schedules.pausedNext')}
        </span>
        {last && (
          <span className="schedule-last" data-testid="schedule-last">
            {t('schedules.lastFire')} <OutcomeBadge outcome={last.outcome} />
            {fireHref(last) && (
              <>
                {' '}
                <Link to={fireHref(last)!} data-testid="schedule-last-session">
                  {t('schedules.openConversation')}
                </Link>
              </>
            )}
          </span>
        )}
      </p>
      {ran && (
        <p className="notice ok small" role="status" data-testid="schedule-ran">
          {t('schedules.ran')} <OutcomeBadge outcome={ran.outcome} />{' '}
          {fireHref(ran) && <Link to={fireHref(ran)!}>{t('schedules.openConversation')}</Link>}
          {ran.detail && <span> {ran.detail}</span>}
        </p>
      )}
      <ErrorLine error={error} />
      <div className="row-actions schedule-actions">
        <button className="btn small" onClick={runNow} disabled={busy} data-testid="schedule-run">
          {t('schedules.runNow')}
        </button>
        <button className="btn ghost small" onClick={toggle} disabled={busy} data-testid="schedule-toggle">
          {s.enabled ? t('schedules.pause') : t('schedules.resume')}
        </button>
        <button className="btn ghost small" onClick={() => setRenaming(s.name)} disabled={busy} data-testid="schedule-rename">
          {t('schedules.rename')}
        </button>
        <button className="btn ghost small" onClick={p.onEdit} disabled={busy} data-testid="schedule-edit">
          {t('schedules.edit')}
        </button>
        <button
          className="btn ghost small"
          aria-expanded={history}
          onClick={() => setHistory((h) => !h)}
          data-testid="schedule-history-toggle"
        >
          {t('schedules.history')}
        </button>
        <button className="btn ghost small danger-text" onClick={remove} disabled={busy} data-testid="schedule-delete">
          {t('common.delete')}
        </button>
      </div>
      {history && <ScheduleHistory schedule={s} />}
    </li>
  )
}
