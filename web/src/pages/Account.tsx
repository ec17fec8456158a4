// The signed-in user's own account on /settings: your timezone (`GET/PUT
// /v1/me/timezone`, what your new schedules take), changing the password
// (`POST /v1/me/password`), the list of sign-ins (`GET /v1/tokens`, revoked with
// `DELETE /v1/tokens/{id}`) and the files you store against your quota (`storage`
// of `GET /v1/me`). The rules (password bounds, which tokens are sign-ins and
// their order, how full the storage is) live in `account.ts`, the timezone's in
// `timezone.ts`; this file only renders them.

import { useEffect, useId, useMemo, useState, type FormEvent } from 'react'
import { useNavigate } from 'react-router'
import { ApiError, api } from '../api'
import { checkNewPassword, PASSWORD_MAX_CHARS, PASSWORD_MIN_CHARS, signIns, storageShare, type NewPasswordCheck, type StorageShare } from '../account'
import { useAuth } from '../auth'
import { ErrorLine, Section } from '../components/Section'
import { TimezoneInput, ZoneShortcuts } from '../components/TimezoneInput'
import { fmtBytes, fmtDate } from '../format'
import { useI18n, type Translate } from '../i18n'
import { browserTimezone, saveTimezone, timezoneError, yourTimezone } from '../timezone'
import type { ApiToken, TimezoneDto } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))

function problemText(check: Exclude<NewPasswordCheck, 'ok'>, t: Translate): string {
  switch (check) {
    case 'too_short':
      return t('settings.passwordTooShort', { n: PASSWORD_MIN_CHARS })
    case 'too_long':
      return t('settings.passwordTooLong', { n: PASSWORD_MAX_CHARS })
    case 'mismatch':
      return t('settings.passwordMismatch')
  }
}

/** Changes your password; `onChanged` runs after the server accepted it (it signed out your other sign-ins). */
export function PasswordSection({ onChanged }: { onChanged: () => void }) {
  const { t } = useI18n()
  const { user } = useAuth()
  const [form, setForm] = useState({ current: '', next: '', confirm: '' })
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [changed, setChanged] = useState(false)

  async function submit(e: FormEvent) {
    e.preventDefault()
    setChanged(false)
    const check = checkNewPassword(form.next, form.confirm)
    if (check !== 'ok') {
      setError(problemText(check, t))
      return
    }
    setBusy(true)
    setError(null)
    try {
      await api.changePassword({ current: form.current, new: form.next })
      setForm({ current: '', next: '', confirm: '' })
      setChanged(true)
      onChanged()
    } catch (err) {
      // The server's own words (wrong current password, rate limited, …).
      const retry = err instanceof ApiError && err.retryAfter ? ` (${t('settings.retryIn', { n: err.retryAfter })})` : ''
      setError(errText(err) + retry)
    } finally {
      setBusy(false)
    }
  }

  const field = (key: keyof typeof form, label: string, autoComplete: string) => (
    <label>
      {label}
      <input
        type="password"
        name={key}
        data-testid={`password-${key}`}
        autoComplete={autoComplete}
        value={form[key]}
        onChange={(e) => setForm({ ...form, [key]: e.target.value })}
      />
    </label>
  )

  return (
    <Section title={t('settings.passwordTitle')} testid="password">
      <p className="muted">{t('settings.passwordHint')}</p>
      <form className="stack-form" onSubmit={submit}>
        {/* For password managers: which account this password belongs to. */}
        <input type="text" name="username" autoComplete="username" value={user?.username ?? ''} readOnly hidden />
        {field('current', t('settings.currentPassword'), 'current-password')}
        {field('next', t('settings.newPasswordLabel'), 'new-password')}
        {field('confirm', t('settings.confirmPassword'), 'new-password')}
        {error && (
          <p className="notice error" role="alert" data-testid="password-error">
            {error}
          </p>
        )}
        {changed && (
          <p className="notice ok" role="status" data-testid="password-changed">
            {t('settings.passwordChanged')}
          </p>
        )}
        <div>
          <button
            className="btn primary"
            type="submit"
            data-testid="password-submit"
            disabled={busy || !form.current || !form.next || !form.confirm}
          >
            {busy ? t('settings.changingPassword') : t('settings.changePassword')}
          </button>
        </div>
      </form>
    </Section>
  )
}

function kindLabel(kind: string, t: Translate): string {
  if (kind === 'login') return t('settings.kindLogin')
  if (kind === 'bootstrap') return t('settings.kindBootstrap')
  if (kind === 'api') return t('settings.kindApi')
  return kind
}

/** Where you're signed in; reloads whenever `version` changes. */
export function SignInsSection({ version }: { version: number }) {
  const { t, lang } = useI18n()
  const { signOut } = useAuth()
  const nav = useNavigate()
  const [tokens, setTokens] = useState<ApiToken[] | null>(null)
  const [error, setError] = useState<string | null>(null)

  useEffect(() => {
    let live = true
    api
      .listAllTokens()
      .then((all) => live && setTokens(signIns(all)))
      .catch((e) => live && setError(errText(e)))
    return () => {
      live = false
    }
  }, [version])

  async function revoke(tok: ApiToken) {
    const ask = tok.current
      ? t('settings.confirmRevokeCurrent')
      : t('settings.confirmRevokeSignIn', { when: fmtDate(tok.created_at, lang) })
    if (!window.confirm(ask)) return
    setError(null)
    try {
      await api.revokeToken(tok.id)
    } catch (err) {
      // 404: it was gone already (expired, signed out elsewhere); anything else stays listed.
      if (!(err instanceof ApiError && err.status === 404)) {
        setError(errText(err))
        return
      }
    }
    if (tok.current) {
      await signOut()
      nav('/login', { replace: true })
      return
    }
    setTokens((cur) => cur && cur.filter((x) => x.id !== tok.id))
  }

  return (
    <Section title={t('settings.signIns')} testid="sign-ins">
      <p className="muted">{t('settings.signInsHint')}</p>
      <ErrorLine error={error} />
      {tokens && tokens.length > 0 && (
        <div className="table-wrap">
          <table className="grid">
            <thead>
              <tr>
                <th>{t('settings.kind')}</th>
                <th>{t('settings.tokenName')}</th>
                <th>{t('settings.created')}</th>
                <th>{t('settings.lastUsed')}</th>
                <th>{t('settings.expires')}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {tokens.map((tok) => (
                <tr key={tok.id} data-testid="sign-in-row" data-current={tok.current ? 'true' : undefined}>
                  <td>
                    {kindLabel(tok.kind, t)}{' '}
                    {tok.current && (
                      <span className="badge current" data-testid="this-browser">
                        {t('settings.thisBrowser')}
                      </span>
                    )}
                  </td>
                  <td>{tok.name}</td>
                  <td>{fmtDate(tok.created_at, lang)}</td>
                  <td>{tok.last_used_at ? fmtDate(tok.last_used_at, lang) : '–'}</td>
                  <td>{tok.expires_at ? fmtDate(tok.expires_at, lang) : '–'}</td>
                  <td className="actions">
                    <button
                      className="btn ghost small danger-text"
                      data-testid="revoke-sign-in"
                      onClick={() => revoke(tok)}
                    >
                      {t('settings.revoke')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {tokens && tokens.length === 0 && <p className="muted">{t('settings.noSignIns')}</p>}
    </Section>
  )
}

/** How much of your file storage your attachments take (read fresh: it changes with every file you send). */
export function StorageSection() {
  const { t } = useI18n()
  const [share, setShare] = useState<StorageShare | null>(null)
  const [error, setError] = useState<string | null>(null)

  useEffect(() => {
    let live = true
    api
      .me()
      .then((me) => live && me.storage && setShare(storageShare(me.storage)))
      .catch((e) => live && setError(errText(e)))
    return () => {
      live = false
    }
  }, [])

  return (
    <Section title={t('settings.storage')} testid="storage">
      <p className="muted">{t('settings.storageHint')}</p>
      <ErrorLine error={error} />
      {share && (
        <>
          <p data-testid="storage-used">
            {share.limit === null || share.percent === null
              ? t('settings.storageUnlimited', { used: fmtBytes(share.used) })
              : t('settings.storageUsed', { used: fmtBytes(share.used), limit: fmtBytes(share.limit), percent: share.percent })}
          </p>
          {share.percent !== null && <progress max={100} value={share.percent} aria-label={t('settings.storage')} />}
          {share.full && (
            <p className="notice error" role="status" data-testid="storage-full">
              {t('settings.storageFull')}
            </p>
          )}
        </>
      )}
    </Section>
  )
}

/**
 * Your timezone: the one the schedules you make without one take. Save sets what
 * was typed (the server's 422 for an unknown name shows under the field), Clear
 * goes back to the server's default; schedules made before keep theirs.
 */
export function TimezoneSection() {
  const { t } = useI18n()
  const [saved, setSaved] = useState<TimezoneDto | null>(null)
  const [typed, setTyped] = useState('')
  const [refused, setRefused] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const [done, setDone] = useState<string | null>(null)
  const browser = useMemo(browserTimezone, [])
  const errorId = useId()

  useEffect(() => {
    let live = true
    api
      .myTimezone()
      .then((dto) => {
        if (!live) return
        setSaved(dto)
        setTyped(dto.timezone ?? '')
      })
      .catch((e) => live && setError(errText(e)))
    return () => {
      live = false
    }
  }, [])

  async function apply(zone: string | null) {
    setBusy(true)
    setRefused(null)
    setError(null)
    setDone(null)
    try {
      const dto = await api.setMyTimezone(zone)
      setSaved(dto)
      setTyped(dto.timezone ?? '')
      const now = yourTimezone(dto)
      setDone(now.kind === 'yours' ? t('settings.timezoneSaved', { zone: now.zone }) : t('settings.timezoneCleared', { zone: now.zone }))
    } catch (err) {
      // An unknown name: the server's words under the field, and what was typed stays.
      if (err instanceof ApiError && err.status === 422) setRefused(timezoneError(err.message))
      else setError(errText(err))
    } finally {
      setBusy(false)
    }
  }

  function submit(e: FormEvent) {
    e.preventDefault()
    if (!saved) return
    const save = saveTimezone(typed, saved)
    if (save.ok) void apply(save.zone)
  }

  const edit = (zone: string) => {
    setTyped(zone)
    setRefused(null)
    setDone(null)
  }

  const shown = saved && yourTimezone(saved)
  const serverDefault = shown && t('settings.timezoneServerDefault', { zone: shown.zone })
  return (
    <Section title={t('settings.timezone')} testid="timezone">
      <p className="muted">{t('settings.timezoneHint')}</p>
      <ErrorLine error={error} />
      {saved && shown && (
        <p data-testid="timezone-current" data-kind={shown.kind}>
          {t('settings.timezoneNow', { zone: shown.kind === 'yours' ? shown.zone : serverDefault! })}
        </p>
      )}
      {saved && shown && (
        <form className="stack-form" onSubmit={submit}>
          <label>
            {t('settings.timezoneLabel')}
            <TimezoneInput
              value={typed}
              onChange={edit}
              testid="timezone-input"
              extra={[saved.timezone, saved.effective, browser]}
              placeholder={shown.kind === 'server' ? serverDefault! : undefined}
              invalid={!!refused}
              describedBy={refused ? errorId : undefined}
            />
          </label>
          {refused && (
            <span className="field-error" role="alert" id={errorId} data-testid="timezone-error">
              {refused}
            </span>
          )}
          <ZoneShortcuts current={typed.trim() || shown.zone} browser={browser} onPick={edit} testid="timezone-use" />
          {done && (
            <p className="notice ok" role="status" data-testid="timezone-saved">
              {done}
            </p>
          )}
          <div className="zone-actions">
            <button className="btn primary" type="submit" disabled={busy || !saveTimezone(typed, saved).ok} data-testid="timezone-save">
              {busy ? t('settings.timezoneSaving') : t('settings.timezoneSave')}
            </button>
            {saved.timezone && (
              <button className="btn ghost" type="button" disabled={busy} onClick={() => void apply(null)} data-testid="timezone-clear">
                {t('settings.timezoneClear')}
              </button>
            )}
          </div>
        </form>
      )}
    </Section>
  )
}
