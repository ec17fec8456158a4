import { useState } from 'react'
import { api } from '../api'
import { fmtMs } from '../format'
import { useT } from '../i18n'
import type { ToolView } from '../stream/reducer'

function pretty(v: unknown): string {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2)
    } catch {
      return v
    }
  }
  return JSON.stringify(v, null, 2)
}

function oneLine(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v ?? {})
  return s.length > 80 ? `${s.slice(0, 77)}…` : s
}

export function ToolCard({ tool }: { tool: ToolView }) {
  const t = useT()
  const [deciding, setDeciding] = useState(false)
  const [err, setErr] = useState<string | null>(null)
  const label = {
    running: t('tool.running'),
    ok: t('tool.ok'),
    failed: t('tool.failed'),
    awaiting_approval: t('tool.awaiting'),
  }[tool.status]

  async function decide(d: 'approve' | 'deny' | 'always') {
    if (!tool.approvalId) return
    setDeciding(true)
    setErr(null)
    try {
      await api.decideApproval(tool.approvalId, d)
    } catch (e) {
      setErr(e instanceof Error ? e.message : String(e))
      setDeciding(false)
    }
  }

  return (
    <details className={`tool tool-${tool.status}`} data-testid="tool-call" open={tool.status === 'awaiting_approval'}>
      <summary>
        <span className={`pill ${tool.status}`}>
          {tool.status === 'running' && <span className="spinner" aria-hidden="true" />}
          {label}
        </span>
        <code className="tool-name">{tool.name}</code>
        <span className="tool-args-preview">{oneLine(tool.args)}</span>
        {tool.durationMs !== undefined && <span className="muted">{fmtMs(tool.durationMs)}</span>}
      </summary>
      <div className="tool-body">
        <div className="tool-section">{t('tool.args')}</div>
        <pre>{pretty(tool.args) || '{}'}</pre>
        {tool.output !== undefined && (
          <>
            <div className="tool-section">{t('tool.output')}</div>
            <pre>{tool.output}</pre>
          </>
        )}
        {tool.status === 'awaiting_approval' && tool.approvalId && (
          <div className="approval">
            <button className="btn primary small" disabled={deciding} onClick={() => decide('approve')}>
              {t('tool.approve')}
            </button>
            <button className="btn small" disabled={deciding} onClick={() => decide('always')}>
              {t('tool.always')}
            </button>
            <button className="btn danger small" disabled={deciding} onClick={() => decide('deny')}>
              {t('tool.deny')}
            </button>
            {err && <span className="form-error">{err}</span>}
          </div>
        )}
      </div>
    </details>
  )
}
