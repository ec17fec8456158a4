import { describe, expect, it } from 'vitest'
import {
  CHANNEL_KINDS,
  KIND_LABEL,
  STATUS_LABEL,
  TEST_WATCH_MS,
  channelFieldError,
  createChannelRequest,
  deliverNames,
  emptyChannelForm,
  formFromChannel,
  patchChannelRequest,
  sameChoice,
  shownSecret,
  targetFromForm,
  targetSummary,
  testPollDelay,
  toggleChoice,
  withDelivery,
  withoutSecret,
  type ChannelForm,
} from './channels'
import { translator } from './i18n'
import type { Channel, Delivery } from './types'

const form = (over: Partial<ChannelForm> = {}): ChannelForm => ({ ...emptyChannelForm(), ...over })

const channel = (over: Partial<Channel> = {}): Channel => ({
  id: 'chn1',
  name: 'ops-webhook',
  target: { kind: 'webhook', url: 'https://hooks.example.com/weft' },
  secret_hint: 'whsec_…3f9a',
  waits: false,
  schedules: 2,
  created_at: '2026-12-01T00:00:00Z',
  updated_at: '2026-12-01T00:00:00Z',
  ...over,
})

const delivery = (over: Partial<Delivery> = {}): Delivery => ({
  id: 'dlv1',
  channel_id: 'chn1',
  notification_kind: 'channel_test',
  status: 'pending',
  attempts: 0,
  created_at: '2026-12-06T10:00:00Z',
  ...over,
})

describe('the target a form stands for', () => {
  it('is a webhook by default, its secret only when one is typed', () => {
    expect(emptyChannelForm().kind).toBe('webhook')
    expect(targetFromForm(form({ url: ' https://example.com/h ' }))).toEqual({
      ok: true,
      value: { kind: 'webhook', url: 'https://example.com/h' },
    })
    expect(targetFromForm(form({ url: 'https://example.com/h', secret: '  whsec_0123456789abcdef ' }))).toEqual({
      ok: true,
      value: { kind: 'webhook', url: 'https://example.com/h', secret: 'whsec_0123456789abcdef' },
    })
    expect(targetFromForm(form({ url: '  ' }))).toEqual({ ok: false, field: 'url', message: 'channels.err.urlEmpty' })
  })

  it('leaves what only the server can judge to it: an address its guard refuses is sent as typed', () => {
    expect(targetFromForm(form({ url: 'http://10.0.0.1/x' }))).toEqual({ ok: true, value: { kind: 'webhook', url: 'http://10.0.0.1/x' } })
    expect(targetFromForm(form({ url: 'https://example.com/h', secret: 'short' }))).toMatchObject({ ok: true })
  })

  it('is a Lark DM without a chat id, else that chat', () => {
    expect(targetFromForm(form({ kind: 'lark', chatId: ' ' }))).toEqual({ ok: true, value: { kind: 'lark' } })
    expect(targetFromForm(form({ kind: 'lark', chatId: ' oc_abc ' }))).toEqual({ ok: true, value: { kind: 'lark', chat_id: 'oc_abc' } })
  })

  it('needs an address for email', () => {
    expect(targetFromForm(form({ kind: 'email', to: ' a@example.com ' }))).toEqual({ ok: true, value: { kind: 'email', to: 'a@example.com' } })
    expect(targetFromForm(form({ kind: 'email', to: '' }))).toEqual({ ok: false, field: 'to', message: 'channels.err.toEmpty' })
  })

  it('uses only the kind’s own fields: what was typed for another kind is not sent', () => {
    expect(targetFromForm(form({ kind: 'email', to: 'a@example.com', url: 'https://x', chatId: 'oc_1' }))).toEqual({
      ok: true,
      value: { kind: 'email', to: 'a@example.com' },
    })
  })
})

describe('what a save sends', () => {
  it('makes a channel with a trimmed name; an empty one is refused before asking', () => {
    expect(createChannelRequest(form({ name: ' ops ', url: 'https://example.com/h' }))).toEqual({
      ok: true,
      value: { name: 'ops', target: { kind: 'webhook', url: 'https://example.com/h' }, waits: false },
    })
    expect(createChannelRequest(form({ name: ' ', url: 'https://example.com/h' }))).toEqual({
      ok: false,
      field: 'name',
      message: 'channels.err.nameEmpty',
    })
    expect(createChannelRequest(form({ name: 'x', kind: 'email' }))).toMatchObject({ ok: false, field: 'to' })
  })

  it('makes a channel that takes the waits of your own runs only when ticked', () => {
    expect(emptyChannelForm().waits).toBe(false)
    expect(createChannelRequest(form({ name: 'phone', kind: 'lark', waits: true }))).toEqual({
      ok: true,
      value: { name: 'phone', target: { kind: 'lark' }, waits: true },
    })
  })

  it('reads a channel back into the form, without its secret', () => {
    expect(formFromChannel(channel())).toEqual({ ...emptyChannelForm(), name: 'ops-webhook', url: 'https://hooks.example.com/weft' })
    expect(formFromChannel(channel({ target: { kind: 'lark' } }))).toMatchObject({ kind: 'lark', chatId: '' })
    expect(formFromChannel(channel({ target: { kind: 'lark', chat_id: 'oc_1' } }))).toMatchObject({ kind: 'lark', chatId: 'oc_1' })
    expect(formFromChannel(channel({ target: { kind: 'email', to: 'a@example.com' } }))).toMatchObject({ kind: 'email', to: 'a@example.com' })
    expect(formFromChannel(channel({ waits: true })).waits).toBe(true)
  })

  it('changes only what the form changed: an untouched target is not checked again', () => {
    const c = channel()
    expect(patchChannelRequest(c, formFromChannel(c))).toEqual({ ok: true, value: {} })
    expect(patchChannelRequest(c, { ...formFromChannel(c), name: ' ops ' })).toEqual({ ok: true, value: { name: 'ops' } })
    expect(patchChannelRequest(c, { ...formFromChannel(c), url: 'https://hooks.example.com/v2' })).toEqual({
      ok: true,
      value: { target: { kind: 'webhook', url: 'https://hooks.example.com/v2' } },
    })
    // A secret typed is a new one, even at the same URL; left empty, the server keeps the old.
    expect(patchChannelRequest(c, { ...formFromChannel(c), secret: 'whsec_0123456789abcdef' })).toEqual({
      ok: true,
      value: { target: { kind: 'webhook', url: 'https://hooks.example.com/weft', secret: 'whsec_0123456789abcdef' } },
    })
    expect(patchChannelRequest(c, { ...formFromChannel(c), kind: 'email', to: 'a@example.com' })).toEqual({
      ok: true,
      value: { target: { kind: 'email', to: 'a@example.com' } },
    })
    const dm = channel({ target: { kind: 'lark' } })
    expect(patchChannelRequest(dm, formFromChannel(dm))).toEqual({ ok: true, value: {} })
    expect(patchChannelRequest(dm, { ...formFromChannel(dm), chatId: 'oc_2' })).toEqual({
      ok: true,
      value: { target: { kind: 'lark', chat_id: 'oc_2' } },
    })
    expect(patchChannelRequest(c, { ...formFromChannel(c), name: '' })).toMatchObject({ ok: false, field: 'name' })
  })

  it('sends waits only when the box was turned on or off', () => {
    const off = channel()
    expect(patchChannelRequest(off, { ...formFromChannel(off), waits: true })).toEqual({ ok: true, value: { waits: true } })
    const on = channel({ waits: true })
    expect(patchChannelRequest(on, formFromChannel(on))).toEqual({ ok: true, value: {} })
    expect(patchChannelRequest(on, { ...formFromChannel(on), name: 'phone' })).toEqual({ ok: true, value: { name: 'phone' } })
    expect(patchChannelRequest(on, { ...formFromChannel(on), waits: false })).toEqual({ ok: true, value: { waits: false } })
    // Turning it on keeps the target as it is: the URL is not sent (nor checked) again.
    expect(patchChannelRequest(off, { ...formFromChannel(off), name: 'phone', waits: true })).toEqual({
      ok: true,
      value: { name: 'phone', waits: true },
    })
  })
})

describe('a refusal next to its field', () => {
  it('puts each field the server names under that field', () => {
    expect(channelFieldError('target.url: refused: 127.0.0.1 is a loopback address')).toEqual({
      field: 'url',
      text: 'refused: 127.0.0.1 is a loopback address',
    })
    expect(channelFieldError('name: you have a channel of that name')).toEqual({ field: 'name', text: 'you have a channel of that name' })
    expect(channelFieldError('target.chat_id: you have not talked to the bot in chat oc_1').field).toBe('chat_id')
    expect(channelFieldError('target.secret: must be 16 to 256 characters').field).toBe('secret')
    expect(channelFieldError('target.to: "x" is not an email address').field).toBe('to')
  })

  it('puts a refusal of the whole target (a kind not set up here) under the kind', () => {
    expect(channelFieldError('target: email is not set up on this server (an admin sets [email] smtp_url)')).toEqual({
      field: 'kind',
      text: 'email is not set up on this server (an admin sets [email] smtp_url)',
    })
    expect(channelFieldError('target.kind: unknown variant').field).toBe('kind')
  })

  it('keeps a message that names no field of the form whole', () => {
    expect(channelFieldError('limit: must be between 1 and 200')).toEqual({ field: null, text: 'limit: must be between 1 and 200' })
    expect(channelFieldError('You have too many channels')).toEqual({ field: null, text: 'You have too many channels' })
  })
})

describe('a channel in a line', () => {
  const t = translator('en')

  it('says where it delivers', () => {
    expect(targetSummary({ kind: 'webhook', url: 'https://example.com/h' }, t)).toBe('https://example.com/h')
    expect(targetSummary({ kind: 'email', to: 'a@example.com' }, t)).toBe('a@example.com')
    expect(targetSummary({ kind: 'lark' }, t)).toBe('Direct message to you')
    expect(targetSummary({ kind: 'lark', chat_id: 'oc_1' }, t)).toBe('Chat oc_1')
    expect(targetSummary({ kind: 'lark' }, translator('zh'))).toBe('私聊发给你')
  })

  it('names every kind and status in both languages', () => {
    expect(CHANNEL_KINDS).toEqual(['webhook', 'lark', 'email'])
    for (const lang of ['en', 'zh'] as const) {
      const tr = translator(lang)
      for (const key of [...Object.values(KIND_LABEL), ...Object.values(STATUS_LABEL)]) expect(tr(key)).not.toBe(key)
    }
    expect(translator('en')(STATUS_LABEL.delivered)).toBe('delivered')
  })

  it('says in both languages what taking waits means', () => {
    const en = translator('en')
    const zh = translator('zh')
    expect(en('channels.waits')).toBe(
      'Also send me questions, approvals and plans from all my conversations (answer from your phone)',
    )
    expect(zh('channels.waits')).toMatch(/提问、审批和计划/)
    for (const key of ['channels.waitsHint', 'channels.waitsBadge', 'channels.waitsTitle'] as const) {
      expect(en(key)).not.toBe(key)
      expect(zh(key)).not.toBe(key)
      expect(zh(key)).not.toBe(en(key))
    }
  })
})

describe('a secret shown once', () => {
  it('is read from the answer that made the channel, and not kept', () => {
    const made = channel({ target: { kind: 'webhook', url: 'https://example.com/h', secret: 'whsec_abc' } })
    expect(shownSecret(made)).toBe('whsec_abc')
    expect(withoutSecret(made).target).toEqual({ kind: 'webhook', url: 'https://example.com/h' })
    expect(shownSecret(withoutSecret(made))).toBeNull()
    const email = channel({ target: { kind: 'email', to: 'a@example.com' } })
    expect(shownSecret(email)).toBeNull()
    expect(withoutSecret(email)).toBe(email)
  })
})

describe('watching a test message', () => {
  it('looks often at first, then less, and stops once it is settled or has been watched long enough', () => {
    expect(testPollDelay(delivery(), 0)).toBe(500)
    expect(testPollDelay(delivery(), 4_900)).toBe(500)
    expect(testPollDelay(delivery(), 5_000)).toBe(2_000)
    expect(testPollDelay(delivery({ error: 'HTTP 500', attempts: 1 }), 30_000)).toBe(2_000)
    expect(testPollDelay(delivery(), TEST_WATCH_MS)).toBeNull()
    expect(testPollDelay(delivery({ status: 'delivered' }), 100)).toBeNull()
    expect(testPollDelay(delivery({ status: 'failed' }), 100)).toBeNull()
  })

  it('shows its delivery as the channel’s newest, unless a newer one came meanwhile', () => {
    const c = channel()
    expect(withDelivery(c, delivery()).last_delivery?.id).toBe('dlv1')
    const seen = channel({ last_delivery: delivery({ status: 'pending' }) })
    expect(withDelivery(seen, delivery({ status: 'delivered' })).last_delivery?.status).toBe('delivered')
    const newer = channel({ last_delivery: delivery({ id: 'dlv2', created_at: '2026-12-06T10:00:05Z' }) })
    expect(withDelivery(newer, delivery({ status: 'delivered' }))).toBe(newer)
  })
})

describe('a schedule’s channels', () => {
  it('are ticked and unticked in order', () => {
    expect(toggleChoice([], 'a', true)).toEqual(['a'])
    expect(toggleChoice(['a'], 'b', true)).toEqual(['a', 'b'])
    expect(toggleChoice(['a', 'b'], 'a', true)).toEqual(['b', 'a'])
    expect(toggleChoice(['a', 'b'], 'a', false)).toEqual(['b'])
    expect(toggleChoice(['b'], 'a', false)).toEqual(['b'])
  })

  it('are the same whatever their order', () => {
    expect(sameChoice(['a', 'b'], ['b', 'a'])).toBe(true)
    expect(sameChoice([], [])).toBe(true)
    expect(sameChoice(['a'], ['a', 'b'])).toBe(false)
    expect(sameChoice(['a', 'c'], ['a', 'b'])).toBe(false)
  })

  it('are named where the page knows them, else shown by id', () => {
    const cs = [channel(), channel({ id: 'chn2', name: 'me', target: { kind: 'lark' } })]
    expect(deliverNames(['chn2', 'gone', 'chn1'], cs)).toEqual([
      { id: 'chn2', name: 'me', kind: 'lark' },
      { id: 'gone', name: 'gone' },
      { id: 'chn1', name: 'ops-webhook', kind: 'webhook' },
    ])
  })
})
