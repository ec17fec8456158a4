// A schedule's history (`GET /v1/schedules/{id}/fires`, newest first): when each
// fire was due (in the schedule's timezone), how it went, how late it was
// claimed, the run's status and a link to its conversation, why a fire was
// refused or skipped, and where its run's notifications were delivered (each
// channel's status, tries and last error). Read again whenever the schedule's
// newest fire changes, and every few seconds while a delivery is pending.

import { useEffect, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { useI18n, type MessageKey } from '../i18n'
import { ON_TIME_MS, fmtInZone, fmtLateness, latenessMs } from '../schedules'
import type { Fire, FireOutcome, Schedule } from '../types'
import { errText } from '../pages/useTurns'
import { DeliveryRow } from './Deliveries'

/** How soon the history is read again while one of its deliveries is pending, and how many times at most. */
const PENDING_DELIVERY_MS = 2_000
const PENDING_READS = 30

export const OUTCOME_LABEL: Record<FireOutcome, MessageKey> = {
  started: 'schedules.outcome.started',
  queued: 'schedules.outcome.queued',
  skipped: 'schedules.outcome.skipped',
  missed: 'schedules.outcome.missed',
  refused: 'schedules.outcome.refused',
}

const OUTCOME_HINT: Partial<Record<FireOutcome, MessageKey>> = {
  skipped: 'schedules.outcomeHint.skipped',
  missed: 'schedules.outcomeHint.missed',
}

export function OutcomeBadge({ outcome }: { outcome: FireOutcome }) {
  const { t } = useI18n()
  return (
    <span className={`badge outcome-${outcome}`} data-testid="fire-outcome" data-outcome={outcome}>
      {t(OUTCOME_LABEL[outcome])}
    </span>
  )
}

/** `/chat/{session}` of a fire that made a run, or nothing. */
export function fireHref(f: Fire): string | null {
  return f.session_id ? `/chat/${encodeURIComponent(f.session_id)}` : null
}

export function ScheduleHistory({ schedule }: { schedule: Schedule }) {
  const { t, lang } = useI18n()
  const [fires, setFires] = useState<Fire[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const last = schedule.last_fire
  const version = last ? `${last.fire_at}|${last.outcome}|${last.run_status ?? ''}` : ''
  const [reads, setReads] = useState(0)
  const pending = fires?.some((f) => f.deliveries?.some((d) => d.status === 'pending')) ?? false

  useEffect(() => {
    let live = true
    api
      .scheduleFires(schedule.id, 50)
      .then((f) => {
        if (!live) return
        setFires(f)
        setError(null)
      })
      .catch((e) => live && setError(errText(e)))
    return () => {
      live = false
    }
  }, [schedule.id, version, reads])

  // A delivery still pending (its receiver being tried): look again soon, for a minute.
  useEffect(() => {
    if (!pending || reads >= PENDING_READS) return
    const h = setTimeout(() => setReads((n) => n + 1), PENDING_DELIVERY_MS)
    return () => clearTimeout(h)
  }, [pending, fires, reads])

  return (
    <section className="schedule-history" data-testid="schedule-history" aria-label={t('schedules.history')}>
      <h4>{t('schedules.history')}</h4>
      {error && (
        <p className="notice error" role="alert">
          {t('common.error', { message: error })}
        </p>
      )}
      {fires === null ? (
        !error && <p className="muted small">{t('chat.loading')}</p>
      ) : fires.length === 0 ? (
        <p className="muted small" data-testid="fires-none">
          {t('schedules.noFires')}
        </p>
      ) : (
        <ul className="fire-list" data-testid="fire-list">
          {fires.map((f) => {
            const late = latenessMs(f)
            const href = fireHref(f)
            const hint = OUTCOME_HINT[f.outcome]
            return (
              <li key={`${f.fire_at}-${f.manual}`} className="fire-row" data-testid="fire" data-outcome={f.outcome}>
                <span className="fire-when" title={f.fire_at}>
                  {fmtInZone(f.fire_at, schedule.timezone, lang)}
                </span>
                <OutcomeBadge outcome={f.outcome} />
                {f.manual && <span className="badge">{t('schedules.manual')}</span>}
                <span className="muted small" data-testid="fire-lateness" title={t('schedules.latenessHint')}>
                  {late < ON_TIME_MS ? t('schedules.onTime') : t('schedules.late', { d: fmtLateness(late) })}
                </span>
                {f.run_status && (
                  <span className="muted small" data-testid="fire-run-status">
                    {t('schedules.runStatus', { status: f.run_status })}
                  </span>
                )}
                {href && (
                  <Link to={href} data-testid="fire-session">
                    {t('schedules.openConversation')}
                  </Link>
                )}
                {(f.detail || hint) && (
                  <span className="fire-detail small" data-testid="fire-detail">
                    {f.detail || (hint && t(hint))}
                  </span>
                )}
                {!!f.deliveries?.length && (
                  <div className="fire-deliveries small" data-testid="fire-deliveries">
                    <span className="muted">{t('schedules.deliveries')}</span>
                    <ul className="delivery-list inline">
                      {f.deliveries.map((d) => (
                        <DeliveryRow key={d.id} d={d} withChannel />
                      ))}
                    </ul>
                  </div>
                )}
              </li>
            )
          })}
        </ul>
      )}
    </section>
  )
}
