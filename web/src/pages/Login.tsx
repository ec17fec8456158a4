import { useState, type FormEvent } from 'react'
import { Navigate, useNavigate, useSearchParams } from 'react-router'
import { ApiError } from '../api'
import { useAuth } from '../auth'
import { useT } from '../i18n'
import { LangSwitch } from '../components/LangSwitch'

export function LoginPage() {
  const { user, signIn } = useAuth()
  const t = useT()
  const nav = useNavigate()
  const [params] = useSearchParams()
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const next = safeNext(params.get('next'))

  if (user) return <Navigate to={next} replace />

  async function submit(e: FormEvent) {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await signIn(username.trim(), password)
      nav(next, { replace: true })
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 400 || err.status === 422)) {
        setError(t('login.failed'))
      } else {
        setError(t('common.error', { message: err instanceof Error ? err.message : String(err) }))
      }
    } finally {
      setBusy(false)
    }
  }

  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} aria-labelledby="login-title">
        <div className="login-head">
          <span className="logo" aria-hidden="true" />
          <h1 id="login-title">{t('login.title')}</h1>
        </div>
        <label>
          {t('login.username')}
          <input
            name="username"
            autoComplete="username"
            autoFocus
            required
            value={username}
            onChange={(e) => setUsername(e.target.value)}
          />
        </label>
        <label>
          {t('login.password')}
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        <button className="btn primary" type="submit" disabled={busy}>
          {busy ? t('login.busy') : t('login.submit')}
        </button>
        <LangSwitch />
      </form>
    </main>
  )
}

/** Only same-site paths, so /login?next= cannot send anyone elsewhere. */
function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/login')) return '/chat'
  return next
}
