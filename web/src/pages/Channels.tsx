// /channels: where a person's notifications go besides the bell (docs/schedules.md,
// "Channels"). Each channel shows its kind, where it delivers, whether it also
// takes what the person's own conversations wait for, how many schedules use it
// and how its newest delivery went, with the error; it can be sent a test
// message, whose delivery is watched as it goes (`testPollDelay`), renamed, edited
// (`ChannelEditor.tsx`), deleted, and its deliveries listed (`ChannelHistory.tsx`).
// A webhook's signing secret is shown once, in its channel's row, with a copy
// button: the page does not keep it past that.

import { useCallback, useEffect, useState } from 'react'
import { api } from '../api'
import { shownSecret, targetSummary, testPollDelay, withDelivery, withoutSecret } from '../channels'
import { ChannelEditor } from '../components/ChannelEditor'
import { ChannelHistory } from '../components/ChannelHistory'
import { DeliveryBadge, DeliveryDetail, KindTag } from '../components/Deliveries'
import { ErrorLine } from '../components/Section'
import { fmtClock } from '../format'
import { useI18n } from '../i18n'
import type { Channel, Delivery } from '../types'
import { errText } from './useTurns'

/** Deliveries read while a test message is watched: enough to find it among others made meanwhile. */
const TEST_LOOKUP = 20

export function ChannelsPage() {
  const { t } = useI18n()
  const [list, setList] = useState<Channel[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [editing, setEditing] = useState<string | null>(null)
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null)

  useEffect(() => {
    api
      .listChannels()
      .then((l) => {
        setList(l)
        setError(null)
      })
      .catch((e) => setError(errText(e)))
  }, [])

  const saved = (c: Channel) => {
    const shown = shownSecret(c)
    if (shown) setSecret({ id: c.id, secret: shown })
    const kept = withoutSecret(c)
    setList((cur) => (cur?.some((x) => x.id === c.id) ? cur.map((x) => (x.id === c.id ? kept : x)) : [...(cur ?? []), kept]))
    setEditing(null)
  }
  const removed = (id: string) => {
    setList((cur) => cur?.filter((x) => x.id !== id) ?? null)
    setSecret((s) => (s?.id === id ? null : s))
  }
  const delivered = useCallback(
    (id: string, d: Delivery) => setList((cur) => cur?.map((x) => (x.id === id ? withDelivery(x, d) : x)) ?? null),
    [],
  )

  return (
    <div className="page schedules channels">
      <h1>{t('channels.title')}</h1>
      <p className="muted">{t('channels.hint')}</p>
      {editing === 'new' ? (
        <ChannelEditor onSaved={saved} onCancel={() => setEditing(null)} />
      ) : (
        <button className="btn primary" onClick={() => setEditing('new')} data-testid="channel-new">
          {t('channels.new')}
        </button>
      )}
      <ErrorLine error={error} />
      {list === null ? (
        !error && <p className="muted">{t('chat.loading')}</p>
      ) : list.length === 0 ? (
        <p className="muted" data-testid="channels-none">
          {t('channels.none')}
        </p>
      ) : (
        <ul className="schedule-list channel-list" data-testid="channel-list">
          {list.map((c) =>
            editing === c.id ? (
              <li key={c.id} className="schedule-row editing" data-testid="channel" data-id={c.id}>
                <ChannelEditor channel={c} onSaved={saved} onCancel={() => setEditing(null)} />
              </li>
            ) : (
              <ChannelRow
                key={c.id}
                channel={c}
                secret={secret?.id === c.id ? secret.secret : null}
                onSecretSeen={() => setSecret(null)}
                onChanged={saved}
                onRemoved={removed}
                onEdit={() => setEditing(c.id)}
                onDelivery={delivered}
              />
            ),
          )}
        </ul>
      )}
    </div>
  )
}

/** A test message sent from the row, and how it is going. */
interface Test {
  delivery: Delivery
  /** when it was sent (ms) */
  since: number
  /** reads made: every read renders, so the next is planned */
  reads: number
}

function ChannelRow(p: {
  channel: Channel
  secret: string | null
  onSecretSeen: () => void
  onChanged: (c: Channel) => void
  onRemoved: (id: string) => void
  onEdit: () => void
  onDelivery: (id: string, d: Delivery) => void
}) {
  const { t, lang } = useI18n()
  const c = p.channel
  const [renaming, setRenaming] = useState<string | null>(null)
  const [history, setHistory] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [test, setTest] = useState<Test | null>(null)
  const { onDelivery } = p

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

  const sendTest = () =>
    act(async () => {
      const delivery = await api.testChannel(c.id)
      setTest({ delivery, since: Date.now(), reads: 0 })
      onDelivery(c.id, delivery)
    })
  const remove = () => {
    const ask = c.schedules
      ? t('channels.confirmDeleteUsed', { name: c.name, n: c.schedules })
      : t('channels.confirmDelete', { name: c.name })
    if (!window.confirm(ask)) return
    void act(async () => {
      await api.deleteChannel(c.id)
      p.onRemoved(c.id)
    })
  }
  const rename = (name: string) =>
    act(async () => {
      if (name.trim() && name.trim() !== c.name) p.onChanged(await api.updateChannel(c.id, { name: name.trim() }))
      setRenaming(null)
    })

  // Watch the test message's delivery until it is delivered or failed (or long enough).
  useEffect(() => {
    if (!test) return
    const delay = testPollDelay(test.delivery, Date.now() - test.since)
    if (delay === null) return
    let live = true
    const h = setTimeout(() => {
      api
        .channelDeliveries(c.id, TEST_LOOKUP)
        .then((list) => {
          const d = list.find((x) => x.id === test.delivery.id)
          if (!live) return
          if (d) onDelivery(c.id, d)
          setTest((cur) =>
            cur?.delivery.id === test.delivery.id ? { ...cur, delivery: d ?? cur.delivery, reads: cur.reads + 1 } : cur,
          )
        })
        .catch(() => live && setTest((cur) => cur && { ...cur, reads: cur.reads + 1 }))
    }, delay)
    return () => {
      live = false
      clearTimeout(h)
    }
  }, [test, c.id, onDelivery])

  const last = c.last_delivery
  const lastAt = last ? (last.delivered_at ?? last.created_at) : undefined
  const watching = test !== null && testPollDelay(test.delivery, Date.now() - test.since) !== null
  return (
    <li className="schedule-row channel-row" data-testid="channel" data-id={c.id} data-kind={c.target.kind}>
      <div className="schedule-head">
        <KindTag kind={c.target.kind} label />
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
              maxLength={100}
              aria-label={t('channels.rename')}
              onChange={(e) => setRenaming(e.target.value)}
              onKeyDown={(e) => e.key === 'Escape' && setRenaming(null)}
              data-testid="channel-rename-input"
            />
            <button className="btn primary small" type="submit" disabled={busy} data-testid="channel-rename-save">
              {t('sessions.save')}
            </button>
            <button className="btn ghost small" type="button" onClick={() => setRenaming(null)}>
              {t('sessions.cancel')}
            </button>
          </form>
        ) : (
          <h2 className="schedule-name" data-testid="channel-name-text">
            {c.name}
          </h2>
        )}
        {c.waits && (
          <span className="badge channel-waits" title={t('channels.waitsTitle')} data-testid="channel-waits-badge">
            {t('channels.waitsBadge')}
          </span>
        )}
      </div>
      <p className="channel-target" data-testid="channel-target">
        <span className="mono">{targetSummary(c.target, t)}</span>
        {c.secret_hint && (
          <span className="muted small" data-testid="channel-secret-hint">
            {' '}
            · {t('channels.secretHint', { hint: c.secret_hint })}
          </span>
        )}
      </p>
      {p.secret && <SecretOnce name={c.name} secret={p.secret} onClose={p.onSecretSeen} />}
      <p className="schedule-meta muted small">
        <span data-testid="channel-schedules" data-count={c.schedules}>
          {c.schedules === 0
            ? t('channels.usedByNone')
            : c.schedules === 1
              ? t('channels.usedByOne')
              : t('channels.usedBy', { n: c.schedules })}
        </span>
        <span className="channel-last" data-testid="channel-last">
          {last ? (
            <>
              {t('channels.lastDelivery')} <DeliveryBadge status={last.status} />{' '}
              <time dateTime={lastAt}>{fmtClock(Date.parse(lastAt ?? ''), lang)}</time>{' '}
              <DeliveryDetail d={last} />
            </>
          ) : (
            t('channels.noDelivery')
          )}
        </span>
      </p>
      {test && (
        <p className="notice small channel-test" role="status" data-testid="channel-test" data-status={test.delivery.status}>
          {watching && <span className="spinner" aria-hidden="true" />} {t('channels.testSent')}{' '}
          <DeliveryBadge status={test.delivery.status} /> <DeliveryDetail d={test.delivery} />
          {!watching && test.delivery.status === 'pending' && <span> {t('channels.testStillPending')}</span>}
        </p>
      )}
      <ErrorLine error={error} />
      <div className="row-actions schedule-actions">
        <button className="btn small" onClick={sendTest} disabled={busy || watching} data-testid="channel-test-send">
          {t('channels.test')}
        </button>
        <button className="btn ghost small" onClick={() => setRenaming(c.name)} disabled={busy} data-testid="channel-rename">
          {t('channels.rename')}
        </button>
        <button className="btn ghost small" onClick={p.onEdit} disabled={busy} data-testid="channel-edit">
          {t('channels.edit')}
        </button>
        <button
          className="btn ghost small"
          aria-expanded={history}
          onClick={() => setHistory((h) => !h)}
          data-testid="channel-history-toggle"
        >
          {t('channels.history')}
        </button>
        <button className="btn ghost small danger-text" onClick={remove} disabled={busy} data-testid="channel-delete">
          {t('common.delete')}
        </button>
      </div>
      {history && <ChannelHistory channel={c} />}
    </li>
  )
}

/** A webhook's signing secret, this once: copy it, then close it; it is not shown again. */
function SecretOnce(p: { name: string; secret: string; onClose: () => void }) {
  const { t } = useI18n()
  const [copied, setCopied] = useState(false)
  async function copy() {
    try {
      await navigator.clipboard.writeText(p.secret)
      setCopied(true)
      setTimeout(() => setCopied(false), 1500)
    } catch {
      // no clipboard here (an insecure origin): the code is selectable with one click
    }
  }
  return (
    <div className="notice ok new-token channel-secret" role="status" data-testid="channel-secret">
      <p>{t('channels.secretOnce', { name: p.name })}</p>
      <code data-testid="channel-secret-value">{p.secret}</code>
      <p className="muted small">{t('channels.secretHow')}</p>
      <div className="row-actions">
        <button className="btn small" type="button" onClick={copy} data-testid="channel-secret-copy">
          {copied ? t('chat.copied') : t('chat.copy')}
        </button>
        <button className="btn ghost small" type="button" onClick={p.onClose} data-testid="channel-secret-close">
          {t('common.close')}
        </button>
      </div>
    </div>
  )
}
