// A channel's deliveries (`GET /v1/channels/{id}/deliveries`, newest first): what
// each delivered (a run that ended or waits, a test), how it went, the tries
// made and the last error, when, and the run's conversation. Read again whenever
// the channel's newest delivery changes.

import { useEffect, useState } from 'react'
import { api } from '../api'
import { useI18n } from '../i18n'
import { errText } from '../pages/useTurns'
import type { Channel, Delivery } from '../types'
import { DeliveryRow } from './Deliveries'

/** Deliveries the history lists. */
const HISTORY_LIMIT = 50

export function ChannelHistory({ channel }: { channel: Channel }) {
  const { t } = useI18n()
  const [list, setList] = useState<Delivery[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const last = channel.last_delivery
  const version = last ? `${last.id}|${last.status}|${last.attempts}` : ''

  useEffect(() => {
    let live = true
    api
      .channelDeliveries(channel.id, HISTORY_LIMIT)
      .then((d) => {
        if (!live) return
        setList(d)
        setError(null)
      })
      .catch((e) => live && setError(errText(e)))
    return () => {
      live = false
    }
  }, [channel.id, version])

  return (
    <section className="schedule-history" data-testid="channel-history" aria-label={t('channels.history')}>
      <h4>{t('channels.history')}</h4>
      {error && (
        <p className="notice error" role="alert">
          {t('common.error', { message: error })}
        </p>
      )}
      {list === null ? (
        !error && <p className="muted small">{t('chat.loading')}</p>
      ) : list.length === 0 ? (
        <p className="muted small" data-testid="deliveries-none">
          {t('channels.noHistory')}
        </p>
      ) : (
        <ul className="delivery-list" data-testid="delivery-list">
          {list.map((d) => (
            <DeliveryRow key={d.id} d={d} />
          ))}
        </ul>
      )}
    </section>
  )
}
