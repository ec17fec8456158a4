// The form that makes or changes a channel (/channels): its name, its kind, and
// the fields of that kind — a webhook's URL and signing secret, a Lark chat (none:
// a direct message), an email address — and whether it also takes what the
// person's own conversations wait for (their questions, approvals and plans,
// as cards with buttons on Lark). A refused save (the SSRF guard's 422 on a
// URL, a chat you are not in, a name you already use) shows the server's reason
// under the field it names; the form keeps everything typed.

import { useState, type FormEvent } from 'react'
import { ApiError, api } from '../api'
import {
  CHANNEL_KINDS,
  KIND_LABEL,
  channelFieldError,
  createChannelRequest,
  emptyChannelForm,
  formFromChannel,
  patchChannelRequest,
  type ChannelField,
  type ChannelForm,
} from '../channels'
import { useI18n, type MessageKey } from '../i18n'
import { errText } from '../pages/useTurns'
import type { Channel, ChannelKind } from '../types'
import { KindIcon } from './Deliveries'
import { Field } from './Field'

type Errors = Partial<Record<ChannelField, string>>

const KIND_HINT: Record<ChannelKind, MessageKey> = {
  webhook: 'channels.kindHint.webhook',
  lark: 'channels.kindHint.lark',
  email: 'channels.kindHint.email',
}

export function ChannelEditor(p: { channel?: Channel; onSaved: (c: Channel) => void; onCancel: () => void }) {
  const { t } = useI18n()
  const [form, setForm] = useState<ChannelForm>(() => (p.channel ? formFromChannel(p.channel) : emptyChannelForm()))
  const [errors, setErrors] = useState<Errors>({})
  const [formError, setFormError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  const set = <K extends keyof ChannelForm>(key: K, value: ChannelForm[K], field: ChannelField) => {
    setForm((f) => ({ ...f, [key]: value }))
    setErrors((e) => ({ ...e, [field]: undefined }))
  }

  async function save(e: FormEvent) {
    e.preventDefault()
    setFormError(null)
    const c = p.channel
    const built = c ? patchChannelRequest(c, form) : createChannelRequest(form)
    if (!built.ok) {
      setErrors({ [built.field]: t(built.message) })
      return
    }
    setErrors({})
    setBusy(true)
    try {
      p.onSaved(await send(c, form))
    } catch (err) {
      // 422 names a field; so does 409 (`name: you have a channel of that name`).
      const named = err instanceof ApiError && (err.status === 422 || err.status === 409) ? channelFieldError(err.message) : null
      if (named?.field) setErrors({ [named.field]: named.text })
      else setFormError(errText(err))
    } finally {
      setBusy(false)
    }
  }

  const hint = p.channel?.secret_hint
  return (
    <form className="card schedule-form channel-form" onSubmit={save} data-testid="channel-form" noValidate>
      <h3>{p.channel ? t('channels.editTitle', { name: p.channel.name }) : t('channels.newTitle')}</h3>
      <Field label={t('channels.name')} error={errors.name} testid="name">
        <input
          value={form.name}
          maxLength={100}
          placeholder={t('channels.namePlaceholder')}
          onChange={(e) => set('name', e.target.value, 'name')}
          data-testid="channel-name"
        />
      </Field>
      <fieldset className="wide schedule-when" data-testid="field-kind">
        <legend>{t('channels.kind')}</legend>
        <div className="schedule-kinds" role="radiogroup" aria-label={t('channels.kind')}>
          {CHANNEL_KINDS.map((k) => (
            <label key={k} className="check">
              <input
                type="radio"
                name="channel-kind"
                checked={form.kind === k}
                onChange={() => set('kind', k, 'kind')}
                data-testid={`channel-kind-${k}`}
              />
              <KindIcon kind={k} />
              {t(KIND_LABEL[k])}
            </label>
          ))}
        </div>
        {errors.kind ? (
          <span className="field-error" role="alert" data-testid="field-error">
            {errors.kind}
          </span>
        ) : (
          <span className="muted small">{t(KIND_HINT[form.kind])}</span>
        )}
        {form.kind === 'webhook' && (
          <>
            <Field label={t('channels.url')} error={errors.url} testid="url" wide>
              <input
                className="mono"
                type="url"
                inputMode="url"
                value={form.url}
                spellCheck={false}
                autoComplete="off"
                placeholder={t('channels.urlPlaceholder')}
                onChange={(e) => set('url', e.target.value, 'url')}
                data-testid="channel-url"
              />
            </Field>
            <Field
              label={t('channels.secret')}
              error={errors.secret}
              testid="secret"
              wide
              hint={
                p.channel?.target.kind === 'webhook' && hint
                  ? t('channels.secretHintEdit', { hint })
                  : t('channels.secretHintNew')
              }
            >
              <input
                className="mono"
                value={form.secret}
                maxLength={256}
                spellCheck={false}
                autoComplete="off"
                onChange={(e) => set('secret', e.target.value, 'secret')}
                data-testid="channel-secret-input"
              />
            </Field>
          </>
        )}
        {form.kind === 'lark' && (
          <Field label={t('channels.chatId')} error={errors.chat_id} testid="chat_id" hint={t('channels.chatIdHint')} wide>
            <input
              className="mono"
              value={form.chatId}
              spellCheck={false}
              autoComplete="off"
              placeholder={t('channels.chatIdPlaceholder')}
              onChange={(e) => set('chatId', e.target.value, 'chat_id')}
              data-testid="channel-chat-id"
            />
          </Field>
        )}
        {form.kind === 'email' && (
          <Field label={t('channels.to')} error={errors.to} testid="to" wide>
            <input
              type="email"
              inputMode="email"
              value={form.to}
              spellCheck={false}
              autoComplete="email"
              placeholder={t('channels.toPlaceholder')}
              onChange={(e) => set('to', e.target.value, 'to')}
              data-testid="channel-to"
            />
          </Field>
        )}
      </fieldset>
      <div className="schedule-field wide channel-waits-field" data-testid="field-waits">
        <label className="check">
          <input
            type="checkbox"
            checked={form.waits}
            onChange={(e) => setForm((f) => ({ ...f, waits: e.target.checked }))}
            data-testid="channel-waits"
          />
          {t('channels.waits')}
        </label>
        <span className="muted small">{t('channels.waitsHint')}</span>
      </div>
      {formError && (
        <p className="notice error wide" role="alert" data-testid="channel-form-error">
          {t('channels.notSaved', { message: formError })}
        </p>
      )}
      <div className="form-bar wide">
        <button className="btn primary" type="submit" disabled={busy} data-testid="channel-save">
          {busy ? t('memory.saving') : p.channel ? t('channels.save') : t('channels.create')}
        </button>
        <button className="btn ghost" type="button" onClick={p.onCancel} data-testid="channel-cancel">
          {t('memory.cancel')}
        </button>
      </div>
    </form>
  )
}

/** Makes the channel, or changes what the form changed (nothing changed: nothing sent). */
async function send(c: Channel | undefined, form: ChannelForm): Promise<Channel> {
  if (!c) {
    const built = createChannelRequest(form)
    if (!built.ok) throw new Error(built.message)
    return api.createChannel(built.value)
  }
  const built = patchChannelRequest(c, form)
  if (!built.ok) throw new Error(built.message)
  return Object.keys(built.value).length ? api.updateChannel(c.id, built.value) : c
}
