// The chat header's "Knowledge" panel: the bases this conversation searches
// besides its agent's (`knowledge` on the session, ids; docs/knowledge.md, "A
// conversation's own bases"). Each tick PATCHes the session with the whole list;
// the server answers with the session as saved, which replaces ours.

import { useEffect, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { toggleName } from '../agents'
import { useT } from '../i18n'
import type { KnowledgeBase, Session } from '../types'

export function SessionKnowledgePanel(p: {
  session: Session
  onSaved: (s: Session) => void
  onClose: () => void
}) {
  const t = useT()
  const [bases, setBases] = useState<KnowledgeBase[] | null>(null)
  const [saving, setSaving] = useState(false)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    api
      .listKnowledge()
      .then(setBases)
      .catch((e) => setError(e instanceof Error ? e.message : String(e)))
  }, [])

  // Ticked at once, while the PATCH goes; the session's list wins again once it is
  // answered (or refused) and on every poll of the chat.
  const saved = p.session.knowledge
  const [chosen, setChosen] = useState<string[]>(saved ?? [])
  useEffect(() => {
    if (!saving) setChosen(saved ?? [])
  }, [saved, saving])

  async function toggle(id: string, on: boolean) {
    const next = toggleName(chosen, id, on)
    setChosen(next)
    setSaving(true)
    setError(null)
    try {
      p.onSaved(await api.updateSession(p.session.id, { knowledge: next }))
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
    } finally {
      setSaving(false)
    }
  }

  return (
    <section className="prompt-panel" id="session-knowledge" data-testid="session-knowledge" aria-label={t('chat.knowledge')}>
      <div className="prompt-head">
        <strong>{t('chat.knowledge')}</strong>
        <span className="muted small">{t('chat.knowledgeHint')}</span>
        <span className="spacer" />
        <button className="btn ghost small" onClick={p.onClose}>
          {t('common.close')}
        </button>
      </div>
      {error && <p className="notice error">{t('common.error', { message: error })}</p>}
      {!bases && !error && <p className="muted">{t('chat.loading')}</p>}
      {bases && !bases.length && (
        <p className="muted">
          {t('knowledge.none')} <Link to="/knowledge">{t('nav.knowledge')}</Link>
        </p>
      )}
      {bases && bases.length > 0 && (
        <div className="kb-choices session-kb">
          {bases.map((b) => (
            <label key={b.id} className="check" title={b.description}>
              <input
                type="checkbox"
                checked={chosen.includes(b.id)}
                disabled={saving}
                data-testid="session-kb"
                data-name={b.name}
                onChange={(e) => toggle(b.id, e.target.checked)}
              />
              {b.name}
              {b.visibility === 'shared' && <span className="muted small">({t('knowledge.shared')})</span>}
            </label>
          ))}
        </div>
      )}
    </section>
  )
}
