// A labelled form control with the server's (or the form's) reason under it: what
// the schedule and channel forms are made of, so a 422 reads the same on both.

import type { ReactNode } from 'react'

export function Field(p: { label: string; error?: string; hint?: string; testid: string; wide?: boolean; children: ReactNode }) {
  return (
    <div className={`schedule-field ${p.wide ? 'wide' : ''}`} data-testid={`field-${p.testid}`}>
      <label>
        <span>{p.label}</span>
        {p.children}
      </label>
      {p.hint && !p.error && <span className="muted small">{p.hint}</span>}
      {p.error && (
        <span className="field-error" role="alert" data-testid="field-error">
          {p.error}
        </span>
      )}
    </div>
  )
}
