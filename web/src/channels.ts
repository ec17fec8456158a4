// The rules behind the /channels page (docs/schedules.md, "Channels"), kept pure so
// they are tested without a browser: the form and the target it stands for (a
// Lark chat or direct message, a signed webhook, an email address) and whether
// it also takes the waits of the person's own runs, what an edit changes, which
// field a 422 names, a target in one line, how long a test message is watched,
// and a schedule's choice of channels.

import type { MessageKey, Translate } from './i18n'
import type {
  Channel,
  ChannelKind,
  ChannelTarget,
  CreateChannelRequest,
  Delivery,
  DeliveryStatus,
  UpdateChannelRequest,
} from './types'

/** The kinds the form offers, in its order. */
export const CHANNEL_KINDS: readonly ChannelKind[] = ['webhook', 'lark', 'email']

export const KIND_LABEL: Record<ChannelKind, MessageKey> = {
  webhook: 'channels.kind.webhook',
  lark: 'channels.kind.lark',
  email: 'channels.kind.email',
}

export const STATUS_LABEL: Record<DeliveryStatus, MessageKey> = {
  pending: 'delivery.status.pending',
  delivered: 'delivery.status.delivered',
  failed: 'delivery.status.failed',
}

/** Everything the form holds, as typed: nothing is lost when the server refuses it. */
export interface ChannelForm {
  name: string
  kind: ChannelKind
  /** Lark: '' = a direct message to the owner */
  chatId: string
  url: string
  /** a webhook's: '' = one made by the server (new), or the one it has (edit) */
  secret: string
  to: string
  /** also every question, approval and plan of the person's own runs, not only their schedules' */
  waits: boolean
}

/** The parts of the form a 422 (or a 409) can name; `kind` stands for the whole target. */
export type ChannelField = 'name' | 'kind' | 'chat_id' | 'url' | 'secret' | 'to'

export type Built<T> = { ok: true; value: T } | { ok: false; field: ChannelField; message: MessageKey }

export function emptyChannelForm(kind: ChannelKind = 'webhook'): ChannelForm {
  return { name: '', kind, chatId: '', url: '', secret: '', to: '', waits: false }
}

/**
 * The target the form stands for, or which field is still empty. What only the
 * server can judge (an address the SSRF guard refuses, a chat you are not in, a
 * secret's length) is left to its 422.
 */
export function targetFromForm(f: ChannelForm): Built<ChannelTarget> {
  switch (f.kind) {
    case 'webhook': {
      const url = f.url.trim()
      if (!url) return { ok: false, field: 'url', message: 'channels.err.urlEmpty' }
      const secret = f.secret.trim()
      return { ok: true, value: secret ? { kind: 'webhook', url, secret } : { kind: 'webhook', url } }
    }
    case 'lark': {
      const chat = f.chatId.trim()
      return { ok: true, value: chat ? { kind: 'lark', chat_id: chat } : { kind: 'lark' } }
    }
    case 'email': {
      const to = f.to.trim()
      if (!to) return { ok: false, field: 'to', message: 'channels.err.toEmpty' }
      return { ok: true, value: { kind: 'email', to } }
    }
  }
}

/** `POST /v1/channels` from the form. */
export function createChannelRequest(f: ChannelForm): Built<CreateChannelRequest> {
  const name = f.name.trim()
  if (!name) return { ok: false, field: 'name', message: 'channels.err.nameEmpty' }
  const target = targetFromForm(f)
  if (!target.ok) return target
  return { ok: true, value: { name, target: target.value, waits: f.waits } }
}

/** The form for editing a channel as it stands (a webhook's secret is never shown again). */
export function formFromChannel(c: Channel): ChannelForm {
  const f = { ...emptyChannelForm(c.target.kind), name: c.name, waits: c.waits }
  const t = c.target
  switch (t.kind) {
    case 'webhook':
      return { ...f, url: t.url }
    case 'lark':
      return { ...f, chatId: t.chat_id ?? '' }
    case 'email':
      return { ...f, to: t.to }
  }
}

/** Whether `next` sends anything `now` does not do: a secret given is always a change. */
function targetChanged(now: ChannelTarget, next: ChannelTarget): boolean {
  if (now.kind !== next.kind) return true
  switch (next.kind) {
    case 'webhook':
      return !!next.secret || (now.kind === 'webhook' && now.url !== next.url)
    case 'lark':
      return now.kind === 'lark' && (now.chat_id ?? '') !== (next.chat_id ?? '')
    case 'email':
      return now.kind === 'email' && now.to !== next.to
  }
}

/**
 * `PATCH /v1/channels/{id}` with only what the form changed: an untouched target
 * is not sent again (the server would check it again, and a webhook's URL again
 * against the SSRF guard).
 */
export function patchChannelRequest(c: Channel, f: ChannelForm): Built<UpdateChannelRequest> {
  const name = f.name.trim()
  if (!name) return { ok: false, field: 'name', message: 'channels.err.nameEmpty' }
  const target = targetFromForm(f)
  if (!target.ok) return target
  const body: UpdateChannelRequest = {}
  if (name !== c.name) body.name = name
  if (targetChanged(c.target, target.value)) body.target = target.value
  if (f.waits !== c.waits) body.waits = f.waits
  return { ok: true, value: body }
}

const FIELDS: Record<string, ChannelField> = {
  name: 'name',
  target: 'kind',
  'target.kind': 'kind',
  'target.url': 'url',
  'target.secret': 'secret',
  'target.chat_id': 'chat_id',
  'target.to': 'to',
}

/**
 * The field a refusal's message names (`target.url: refused: 127.0.0.1 is a
 * loopback address`), and the rest of it; `field` is null when it names none of
 * the form's. `target: …` (Lark or email not set up here) belongs to the kind.
 */
export function channelFieldError(message: string): { field: ChannelField | null; text: string } {
  const m = /^([a-z_]+(?:\.[a-z_]+)*):\s*([\s\S]*)$/.exec(message)
  if (!m) return { field: null, text: message }
  const field = Object.hasOwn(FIELDS, m[1]) ? FIELDS[m[1]] : m[1].startsWith('target.') ? 'kind' : null
  return field ? { field, text: m[2] } : { field: null, text: message }
}

/** Where a channel delivers, in one line: the URL, the address, or which Lark chat. */
export function targetSummary(target: ChannelTarget, t: Translate): string {
  switch (target.kind) {
    case 'webhook':
      return target.url
    case 'email':
      return target.to
    case 'lark':
      return target.chat_id ? t('channels.summary.larkChat', { chat: target.chat_id }) : t('channels.summary.larkDm')
  }
}

/**
 * The channel as the page keeps it: a webhook's secret, shown once from the
 * answer that made or changed it, is not kept past that.
 */
export function withoutSecret(c: Channel): Channel {
  if (c.target.kind !== 'webhook' || c.target.secret == null) return c
  return { ...c, target: { kind: 'webhook', url: c.target.url } }
}

/** The secret an answer shows this once (a webhook made without one, or given a new one). */
export function shownSecret(c: Channel): string | null {
  return c.target.kind === 'webhook' && c.target.secret ? c.target.secret : null
}

// ---- watching a test message ----

/** How long a test message's delivery is watched; a receiver still being retried after that is left to the history. */
export const TEST_WATCH_MS = 60_000

/**
 * When to look at a test message's delivery again, `elapsedMs` after it was
 * sent: often at first (a receiver usually answers within a second), then less;
 * null once it is delivered or failed, or has been watched long enough.
 */
export function testPollDelay(d: Pick<Delivery, 'status'>, elapsedMs: number): number | null {
  if (d.status !== 'pending' || elapsedMs >= TEST_WATCH_MS) return null
  return elapsedMs < 5_000 ? 500 : 2_000
}

/** The channel with `d` as its newest delivery, unless it already shows a newer one. */
export function withDelivery(c: Channel, d: Delivery): Channel {
  const last = c.last_delivery
  if (last && last.id !== d.id && Date.parse(last.created_at) > Date.parse(d.created_at)) return c
  return { ...c, last_delivery: d }
}

// ---- a schedule's channels ----

/** `ids` with `id` ticked or not, in the order they were ticked. */
export function toggleChoice(ids: readonly string[], id: string, on: boolean): string[] {
  const rest = ids.filter((x) => x !== id)
  return on ? [...rest, id] : rest
}

/** The same channels, whatever their order. */
export function sameChoice(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a)
  return sa.size === new Set(b).size && b.every((x) => sa.has(x))
}

/** The channels a schedule names, by name where the page knows them (else by id), in its order. */
export function deliverNames(ids: readonly string[], channels: readonly Channel[]): { id: string; name: string; kind?: ChannelKind }[] {
  return ids.map((id) => {
    const c = channels.find((x) => x.id === id)
    return c ? { id, name: c.name, kind: c.target.kind } : { id, name: id }
  })
}
