// The pieces every /settings section is made of: a titled card, and the line that
// shows what went wrong.

import type { ReactNode } from 'react'
import { useI18n } from '../i18n'

export function Section({ title, children, testid }: { title: string; children: ReactNode; testid?: string }) {
  return (
    <section className="card" data-testid={testid}>
      <h2>{title}</h2>
      {children}
    </section>
  )
}

export function ErrorLine({ error }: { error: string | null }) {
  const { t } = useI18n()
  if (!error) return null
  return (
    <p className="notice error" role="alert">
      {t('common.error', { message: error })}
    </p>
  )
}
