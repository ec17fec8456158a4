// How a notification's deliveries read wherever they are shown — a channel's
// history on /channels, a fire's row in a schedule's history: the channel (its
// kind's icon and name), the status as a badge, the tries made, the last error,
// when, and the conversation of the run it was about.

import { useState } from 'react'
import { useNavigate } from 'react-router'
import { api } from '../api'
import { KIND_LABEL, STATUS_LABEL } from '../channels'
import { fmtClock } from '../format'
import { useI18n } from '../i18n'
import { KIND_LABEL as NOTIFICATION_KIND_LABEL } from '../notifications'
import { errText } from '../pages/useTurns'
import type { ChannelKind, Delivery, DeliveryStatus } from '../types'
import { Icon } from './Icon'

const KIND_ICON: Record<ChannelKind, 'link' | 'chat' | 'mail'> = { webhook: 'link', lark: 'chat', email: 'mail' }

/** A channel kind's icon alone, next to where its name is written anyway. */
export function KindIcon({ kind }: { kind: ChannelKind }) {
  return <Icon name={KIND_ICON[kind]} />
}

/** A channel's kind: its icon, and its name for screen readers (or shown, with `label`). */
export function KindTag({ kind, label = false }: { kind: ChannelKind; label?: boolean }) {
  const { t } = useI18n()
  return (
    <span className={`channel-kind kind-${kind}`} title={t(KIND_LABEL[kind])} data-testid="channel-kind" data-kind={kind}>
      <KindIcon kind={kind} />
      {label ? <span>{t(KIND_LABEL[kind])}</span> : <span className="sr-only">{t(KIND_LABEL[kind])}</span>}
    </span>
  )
}

export function DeliveryBadge({ status }: { status: DeliveryStatus }) {
  const { t } = useI18n()
  return (
    <span className={`badge delivery-${status}`} data-testid="delivery-status" data-status={status}>
      {t(STATUS_LABEL[status])}
    </span>
  )
}

/** The tries made and what the last failed one met: the line under a delivery's badge. */
export function DeliveryDetail({ d }: { d: Delivery }) {
  const { t } = useI18n()
  return (
    <>
      {d.attempts > 0 && (
        <span className="muted small" data-testid="delivery-attempts">
          {d.attempts === 1 ? t('delivery.attemptsOne') : t('delivery.attempts', { n: d.attempts })}
        </span>
      )}
      {d.error && d.status !== 'delivered' && (
        <span className="delivery-error small" data-testid="delivery-error">
          {t('delivery.lastTry', { error: d.error })}
        </span>
      )}
    </>
  )
}

/**
 * One delivery in a list: with its channel (`withChannel`, a fire's) or with
 * what it delivered and its run's conversation (a channel's own history).
 */
export function DeliveryRow({ d, withChannel = false }: { d: Delivery; withChannel?: boolean }) {
  const { t, lang } = useI18n()
  const when = d.delivered_at ?? d.created_at
  return (
    <li className="delivery-row" data-testid="delivery" data-id={d.id} data-status={d.status}>
      {withChannel ? (
        <span className="delivery-channel" data-testid="delivery-channel">
          {d.channel_kind && <KindTag kind={d.channel_kind} />}
          {d.channel_name ?? t('delivery.deletedChannel')}
        </span>
      ) : (
        <time className="delivery-when muted small" dateTime={when} title={new Date(when).toLocaleString(lang === 'zh' ? 'zh-CN' : 'en')}>
          {fmtClock(Date.parse(when), lang)}
        </time>
      )}
      <DeliveryBadge status={d.status} />
      {!withChannel && (
        <span className="muted small" data-testid="delivery-kind">
          {t(NOTIFICATION_KIND_LABEL[d.notification_kind])}
        </span>
      )}
      <DeliveryDetail d={d} />
      {!withChannel && d.run_id && <RunLink runId={d.run_id} />}
    </li>
  )
}

/** "Open the conversation" of a run: its session is looked up when followed. */
function RunLink({ runId }: { runId: string }) {
  const { t } = useI18n()
  const nav = useNavigate()
  const [error, setError] = useState<string | null>(null)
  const follow = () =>
    api
      .getRun(runId)
      .then((r) => nav(`/chat/${encodeURIComponent(r.session_id)}`))
      .catch((e) => setError(errText(e)))
  return (
    <>
      <button type="button" className="btn ghost small link" onClick={follow} data-testid="delivery-run">
        {t('delivery.openConversation')}
      </button>
      {error && <span className="delivery-error small">{error}</span>}
    </>
  )
}
