// /settings: language, your timezone, your own instructions and the agents
// (`Agents.tsx`: admins create, edit and delete them), your password, sign-ins and
// file storage (`Account.tsx`), personal API tokens, the models; for admins also
// users, a read-only view of the limits, the live configuration (`Config.tsx`) and
// the MCP servers (`Mcp.tsx`).

import { useEffect, useReducer, useState, type FormEvent } from 'react'
import { api } from '../api'
import { useAuth } from '../auth'
import { LangSwitch } from '../components/LangSwitch'
import { ErrorLine, Section } from '../components/Section'
import { fmtBytes, fmtDate } from '../format'
import { useI18n, type MessageKey } from '../i18n'
import { PasswordSection, SignInsSection, StorageSection, TimezoneSection } from './Account'
import { AgentsSection, InstructionsSection } from './Agents'
import { ConfigSection } from './Config'
import { McpSection } from './Mcp'
import type { ApiToken, CreatedToken, Limits, Model, Role, User } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))

export function SettingsPage() {
  const { t } = useI18n()
  const { user } = useAuth()
  const admin = user?.role === 'admin'
  // A password change signs out the other sign-ins: the list is read again after one.
  const [signInsVersion, reloadSignIns] = useReducer((n: number) => n + 1, 0)
  return (
    <div className="page settings">
      <h1>{t('settings.title')}</h1>
      <Section title={t('settings.general')}>
        <p>{user && t('settings.account', { name: user.username, role: t(user.role === 'admin' ? 'common.admin' : 'common.user') })}</p>
        <LangSwitch />
      </Section>
      <TimezoneSection />
      <InstructionsSection />
      <AgentsSection admin={admin} />
      <PasswordSection onChanged={reloadSignIns} />
      <SignInsSection version={signInsVersion} />
      <StorageSection />
      <Tokens />
      <Catalogue />
      {admin && <Users me={user!} />}
      {admin && <ConfigSection />}
      {admin && <LimitsView />}
      {admin && <McpSection />}
    </div>
  )
}

function Tokens() {
  const { t, lang } = useI18n()
  const [tokens, setTokens] = useState<ApiToken[]>([])
  const [name, setName] = useState('')
  const [created, setCreated] = useState<CreatedToken | null>(null)
  const [error, setError] = useState<string | null>(null)

  const load = () =>
    api
      .listTokens()
      .then(setTokens)
      .catch((e) => setError(errText(e)))
  useEffect(() => {
    void load()
  }, [])

  async function create(e: FormEvent) {
    e.preventDefault()
    if (!name.trim()) return
    setError(null)
    try {
      setCreated(await api.createToken(name.trim()))
      setName('')
      await load()
    } catch (err) {
      setError(errText(err))
    }
  }

  async function revoke(tok: ApiToken) {
    if (!window.confirm(t('settings.confirmRevoke', { name: tok.name }))) return
    try {
      await api.revokeToken(tok.id)
      setTokens((cur) => cur.filter((x) => x.id !== tok.id))
      if (created?.id === tok.id) setCreated(null)
    } catch (err) {
      setError(errText(err))
    }
  }

  return (
    <Section title={t('settings.tokens')} testid="tokens">
      <p className="muted">{t('settings.tokensHint')}</p>
      <form className="inline-form" onSubmit={create}>
        <input
          placeholder={t('settings.tokenName')}
          aria-label={t('settings.tokenName')}
          data-testid="token-name"
          value={name}
          maxLength={100}
          onChange={(e) => setName(e.target.value)}
        />
        <button className="btn primary" type="submit" disabled={!name.trim()} data-testid="token-create">
          {t('settings.create')}
        </button>
      </form>
      {created && (
        <div className="notice ok new-token" role="status">
          <p>{t('settings.newToken')}</p>
          <code data-testid="new-token">{created.token}</code>
          <button className="btn ghost small" onClick={() => setCreated(null)}>
            {t('common.close')}
          </button>
        </div>
      )}
      <ErrorLine error={error} />
      {tokens.length ? (
        <div className="table-wrap">
          <table className="grid">
            <thead>
              <tr>
                <th>{t('settings.tokenName')}</th>
                <th>{t('settings.created')}</th>
                <th>{t('settings.lastUsed')}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {tokens.map((tok) => (
                <tr key={tok.id}>
                  <td>{tok.name}</td>
                  <td>{fmtDate(tok.created_at, lang)}</td>
                  <td>{tok.last_used_at ? fmtDate(tok.last_used_at, lang) : t('settings.never')}</td>
                  <td className="actions">
                    <button className="btn ghost small danger-text" onClick={() => revoke(tok)}>
                      {t('settings.revoke')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p className="muted">{t('settings.noTokens')}</p>
      )}
    </Section>
  )
}

function Catalogue() {
  const { t } = useI18n()
  const [models, setModels] = useState<Model[]>([])
  useEffect(() => {
    api.models().then(setModels).catch(() => {})
  }, [])
  return (
    <Section title={t('settings.models')} testid="models">
      <div className="table-wrap">
        <table className="grid">
          <thead>
            <tr>
              <th>{t('settings.models')}</th>
              <th>{t('settings.provider')}</th>
            </tr>
          </thead>
          <tbody>
            {models.map((m) => (
              <tr key={m.id}>
                <td>
                  <code>{m.id}</code> {m.default && <span className="badge">{t('settings.default')}</span>}
                </td>
                <td>{m.provider}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Section>
  )
}

function Users({ me }: { me: User }) {
  const { t, lang } = useI18n()
  const [users, setUsers] = useState<User[]>([])
  const [error, setError] = useState<string | null>(null)
  const [form, setForm] = useState({ username: '', password: '', role: 'user' as Role })

  const load = () =>
    api
      .listUsers()
      .then(setUsers)
      .catch((e) => setError(errText(e)))
  useEffect(() => {
    void load()
  }, [])

  async function add(e: FormEvent) {
    e.preventDefault()
    setError(null)
    try {
      await api.createUser({ username: form.username.trim(), password: form.password, role: form.role })
      setForm({ username: '', password: '', role: 'user' })
      await load()
    } catch (err) {
      setError(errText(err))
    }
  }

  async function setRole(u: User, role: Role) {
    try {
      const updated = await api.updateUser(u.id, { role })
      setUsers((cur) => cur.map((x) => (x.id === u.id ? { ...x, ...(updated ?? {}), role } : x)))
    } catch (err) {
      setError(errText(err))
    }
  }

  async function setPassword(u: User) {
    const password = window.prompt(t('settings.newPassword', { name: u.username }))
    if (!password) return
    try {
      await api.updateUser(u.id, { password })
      window.alert(t('settings.saved'))
    } catch (err) {
      setError(errText(err))
    }
  }

  async function remove(u: User) {
    if (!window.confirm(t('settings.confirmDeleteUser', { name: u.username }))) return
    try {
      await api.deleteUser(u.id)
      setUsers((cur) => cur.filter((x) => x.id !== u.id))
    } catch (err) {
      setError(errText(err))
    }
  }

  return (
    <Section title={t('settings.users')} testid="users">
      <form className="inline-form" onSubmit={add}>
        <input
          required
          placeholder={t('settings.username')}
          aria-label={t('settings.username')}
          autoComplete="off"
          value={form.username}
          onChange={(e) => setForm({ ...form, username: e.target.value })}
        />
        <input
          required
          type="password"
          placeholder={t('settings.password')}
          aria-label={t('settings.password')}
          autoComplete="new-password"
          value={form.password}
          onChange={(e) => setForm({ ...form, password: e.target.value })}
        />
        <select
          aria-label={t('settings.role')}
          value={form.role}
          onChange={(e) => setForm({ ...form, role: e.target.value as Role })}
        >
          <option value="user">{t('common.user')}</option>
          <option value="admin">{t('common.admin')}</option>
        </select>
        <button className="btn primary" type="submit">
          {t('settings.addUser')}
        </button>
      </form>
      <ErrorLine error={error} />
      <div className="table-wrap">
        <table className="grid">
          <thead>
            <tr>
              <th>{t('settings.username')}</th>
              <th>{t('settings.role')}</th>
              <th>{t('settings.created')}</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr key={u.id}>
                <td>{u.username}</td>
                <td>
                  <select
                    aria-label={`${t('settings.role')}: ${u.username}`}
                    value={u.role}
                    disabled={u.id === me.id}
                    onChange={(e) => setRole(u, e.target.value as Role)}
                  >
                    <option value="user">{t('common.user')}</option>
                    <option value="admin">{t('common.admin')}</option>
                  </select>
                </td>
                <td>{fmtDate(u.created_at, lang)}</td>
                <td className="actions">
                  <button className="btn ghost small" onClick={() => setPassword(u)}>
                    {t('settings.resetPassword')}
                  </button>
                  {u.id !== me.id && (
                    <button className="btn ghost small danger-text" onClick={() => remove(u)}>
                      {t('common.delete')}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Section>
  )
}

const LIMIT_ROWS: { key: keyof Limits; bytes?: boolean; perUser?: boolean }[] = [
  { key: 'body_bytes', bytes: true },
  { key: 'message_chars' },
  { key: 'attachments_bytes', bytes: true },
  { key: 'images_per_message' },
  { key: 'image_bytes', bytes: true },
  { key: 'documents_per_message' },
  { key: 'document_bytes', bytes: true },
  { key: 'active_runs_per_user', perUser: true },
  { key: 'runs_per_minute_per_user', perUser: true },
  { key: 'storage_bytes_per_user', bytes: true, perUser: true },
]

function LimitsView() {
  const { t } = useI18n()
  const [limits, setLimits] = useState<Limits | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api
      .limits()
      .then(setLimits)
      .catch((e) => setError(errText(e)))
  }, [])
  return (
    <Section title={t('settings.limits')} testid="limits">
      <p className="muted">{t('settings.limitsHint')}</p>
      <ErrorLine error={error} />
      {limits && (
        <dl className="limits">
          {LIMIT_ROWS.map((r) => {
            const v = limits[r.key]
            return (
              <div key={r.key}>
                <dt>{t(`limits.${r.key}` as MessageKey)}</dt>
                <dd>
                  {v === undefined ? '–' : r.perUser && v === 0 ? t('limits.off') : r.bytes ? fmtBytes(v) : v.toLocaleString()}
                </dd>
              </div>
            )
          })}
        </dl>
      )}
    </Section>
  )
}
