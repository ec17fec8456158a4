// /knowledge: the knowledge bases open to you (`GET /v1/knowledge`: yours and the
// shared ones), making one (`shared` only for admins, as the server rules) and
// deleting those you may change. A base opens at /knowledge/:id (`KnowledgeBase.tsx`).

import { useEffect, useState, type FormEvent } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { useAuth } from '../auth'
import { ErrorLine } from '../components/Section'
import { useI18n } from '../i18n'
import { validBaseName } from '../knowledge'
import type { KnowledgeBase, KnowledgeVisibility } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))

export function KnowledgePage() {
  const { t } = useI18n()
  const { user } = useAuth()
  const admin = user?.role === 'admin'
  const [bases, setBases] = useState<KnowledgeBase[] | null>(null)
  const [error, setError] = useState<string | null>(null)

  const load = () =>
    api
      .listKnowledge()
      .then(setBases)
      .catch((e) => setError(errText(e)))
  useEffect(() => {
    void load()
  }, [])

  async function remove(b: KnowledgeBase) {
    if (!window.confirm(t('knowledge.confirmDelete', { name: b.name }))) return
    setError(null)
    try {
      await api.deleteKnowledge(b.id)
      setBases((cur) => cur?.filter((x) => x.id !== b.id) ?? null)
    } catch (err) {
      setError(errText(err))
    }
  }

  return (
    <div className="page knowledge">
      <h1>{t('knowledge.title')}</h1>
      <p className="muted">{t('knowledge.hint')}</p>
      <CreateBase admin={admin} onCreated={(b) => setBases((cur) => [b, ...(cur ?? [])])} />
      <ErrorLine error={error} />
      {bases === null ? (
        <p className="muted">{t('chat.loading')}</p>
      ) : bases.length === 0 ? (
        <p className="muted" data-testid="kb-none">
          {t('knowledge.none')}
        </p>
      ) : (
        <ul className="kb-list" data-testid="kb-list">
          {bases.map((b) => (
            <li key={b.id} className="kb-row" data-testid="kb-row" data-name={b.name}>
              <Link className="kb-link" to={`/knowledge/${b.id}`} data-testid="kb-open">
                <span className="kb-title">
                  {b.name} <VisibilityBadge v={b.visibility} />
                </span>
                {b.description && <span className="kb-desc">{b.description}</span>}
                <span className="muted small">
                  {t('knowledge.owner', { name: b.owner_name })} · {b.documents === 1 ? t('knowledge.oneDocument') : t('knowledge.documents', { n: b.documents })}
                </span>
              </Link>
              {b.can_edit && (
                <button className="btn ghost small danger-text" onClick={() => remove(b)} data-testid="kb-delete">
                  {t('common.delete')}
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

export function VisibilityBadge({ v }: { v: KnowledgeVisibility }) {
  const { t } = useI18n()
  return (
    <span className={`badge ${v === 'shared' ? 'kb-shared' : ''}`} data-testid="kb-visibility">
      {t(v === 'shared' ? 'knowledge.shared' : 'knowledge.private')}
    </span>
  )
}

function CreateBase({ admin, onCreated }: { admin: boolean; onCreated: (b: KnowledgeBase) => void }) {
  const { t } = useI18n()
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [visibility, setVisibility] = useState<KnowledgeVisibility>('private')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)

  async function create(e: FormEvent) {
    e.preventDefault()
    if (!validBaseName(name)) {
      setError(t('knowledge.badName'))
      return
    }
    setBusy(true)
    setError(null)
    try {
      const b = await api.createKnowledge({ name: name.trim(), description: description.trim(), visibility })
      setName('')
      setDescription('')
      onCreated(b)
    } catch (err) {
      setError(errText(err))
    } finally {
      setBusy(false)
    }
  }

  return (
    <form className="inline-form kb-create" onSubmit={create} data-testid="kb-create">
      <input
        required
        maxLength={64}
        placeholder={t('knowledge.name')}
        aria-label={t('knowledge.name')}
        value={name}
        data-testid="kb-name"
        onChange={(e) => setName(e.target.value)}
      />
      <input
        maxLength={1000}
        placeholder={t('knowledge.description')}
        aria-label={t('knowledge.description')}
        value={description}
        data-testid="kb-description"
        onChange={(e) => setDescription(e.target.value)}
      />
      {admin && (
        <select
          aria-label={t('knowledge.visibility')}
          value={visibility}
          data-testid="kb-visibility-select"
          onChange={(e) => setVisibility(e.target.value as KnowledgeVisibility)}
        >
          <option value="private">{t('knowledge.privateHint')}</option>
          <option value="shared">{t('knowledge.sharedHint')}</option>
        </select>
      )}
      <button className="btn primary" type="submit" disabled={busy || !name.trim()} data-testid="kb-create-submit">
        {t('knowledge.create')}
      </button>
      <ErrorLine error={error} />
    </form>
  )
}
