// "Forget everything" on /memory: every memory of yours at once (`DELETE
// /v1/me/memories`), only after the phrase shown is typed — a click alone never
// does it — then how many were forgotten.

import { useState, type FormEvent } from 'react'
import { useI18n } from '../i18n'
import { forgetConfirmed } from '../memory'
import { errText } from '../pages/useTurns'
import { ErrorLine } from './Section'

export function ForgetMemories({ onForget }: { onForget: () => Promise<number> }) {
  const { t } = useI18n()
  const [open, setOpen] = useState(false)
  const [typed, setTyped] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [forgotten, setForgotten] = useState<number | null>(null)
  const phrase = t('memory.forgetPhrase')
  const confirmed = forgetConfirmed(typed, phrase)

  function close() {
    setOpen(false)
    setTyped('')
    setError(null)
  }

  async function forget(e: FormEvent) {
    e.preventDefault()
    if (!confirmed) return
    setBusy(true)
    setError(null)
    try {
      const n = await onForget()
      close()
      setForgotten(n)
    } catch (err) {
      setError(errText(err))
    } finally {
      setBusy(false)
    }
  }

  return (
    <section className="memory-forget" data-testid="memory-forget">
      {forgotten !== null && (
        <p className="notice ok" role="status" data-testid="memory-forgotten">
          {forgotten === 1 ? t('memory.forgottenOne') : t('memory.forgotten', { n: forgotten })}
        </p>
      )}
      {open ? (
        <form className="card memory-forget-form" onSubmit={forget}>
          <h2>{t('memory.forgetTitle')}</h2>
          <p className="muted">{t('memory.forgetHint')}</p>
          <label>
            {t('memory.forgetType', { phrase })}
            <input
              value={typed}
              autoFocus
              autoComplete="off"
              spellCheck={false}
              onChange={(e) => setTyped(e.target.value)}
              onKeyDown={(e) => e.key === 'Escape' && close()}
              data-testid="memory-forget-input"
            />
          </label>
          <ErrorLine error={error} />
          <div className="form-bar">
            <button className="btn ghost" type="button" onClick={close}>
              {t('memory.cancel')}
            </button>
            <button className="btn danger" type="submit" disabled={!confirmed || busy} data-testid="memory-forget-confirm">
              {t('memory.forgetConfirm')}
            </button>
          </div>
        </form>
      ) : (
        <button
          className="btn danger-text"
          onClick={() => {
            setForgotten(null)
            setOpen(true)
          }}
          data-testid="memory-forget-open"
        >
          {t('memory.forgetAll')}
        </button>
      )}
    </section>
  )
}
