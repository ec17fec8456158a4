// One tool call of a reply: its arguments and output, and — for a call whose
// policy is `confirm` — the approval: the buttons while it waits (with when it
// expires), what the server said when a decision was refused (409), and once
// `approval_decided` arrives, the decision and who made it.

import { useEffect, useState } from 'react'
import { ApiError, api } from '../api'
import { fmtClock, fmtLeft, fmtMs } from '../format'
import { useI18n, type Translate } from '../i18n'
import type { ApprovalOutcome, ToolView } from '../stream/reducer'
import type { Approval, ApprovalDecision } from '../types'

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

/** "approved by alice", "denied", "expired" — from the event, or from our own decision's answer. */
export function decisionText(t: Translate, d: ApprovalOutcome): string {
  switch (d.decision) {
    case 'approved':
      return d.by ? t('tool.approvedBy', { by: d.by }) : t('tool.approved')
    case 'denied':
      return d.by ? t('tool.deniedBy', { by: d.by }) : t('tool.denied')
    case 'expired':
      return t('tool.expired')
    default:
      return d.by ? `${d.decision} (${d.by})` : d.decision
  }
}

/** The current time, re-read every `everyMs` while `active`. */
export function useNow(active: boolean, everyMs: number): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    if (!active) return
    setNow(Date.now())
    const timer = setInterval(() => setNow(Date.now()), everyMs)
    return () => clearInterval(timer)
  }, [active, everyMs])
  return now
}

export function ToolCard({ tool }: { tool: ToolView }) {
  const { t, lang } = useI18n()
  const [deciding, setDeciding] = useState<ApprovalDecision | null>(null)
  const [err, setErr] = useState<string | null>(null)
  /** the server refused for good (409: decided elsewhere, expired, run ended) */
  const [refused, setRefused] = useState(false)
  /** our decision, accepted; the run resumes and `approval_decided` follows */
  const [sent, setSent] = useState<Approval | null>(null)

  const awaiting = tool.status === 'awaiting_approval' && !!tool.approvalId
  const now = useNow(awaiting && tool.expiresAt !== undefined, 10_000)
  const decision = tool.decision ?? (awaiting && sent ? { decision: sent.status, by: sent.decided_by ?? null } : undefined)
  const refusedCall = tool.decision && tool.decision.decision !== 'approved' && tool.status === 'failed'

  const label = awaiting && sent
    ? t('tool.resuming')
    : refusedCall
      ? decisionText(t, { decision: tool.decision!.decision, by: null })
      : {
          running: t('tool.running'),
          ok: t('tool.ok'),
          failed: t('tool.failed'),
          awaiting_approval: t('tool.awaiting'),
        }[tool.status]

  async function decide(d: ApprovalDecision) {
    if (!tool.approvalId || deciding) return
    setDeciding(d)
    setErr(null)
    try {
      setSent(await api.decideApproval(tool.approvalId, d))
    } catch (e) {
      setErr(e instanceof Error ? e.message : String(e))
      if (e instanceof ApiError && (e.status === 409 || e.status === 404)) setRefused(true)
    } finally {
      setDeciding(null)
    }
  }

  const showButtons = awaiting && !sent && !refused
  const button = (d: ApprovalDecision, cls: string, text: string) => (
    <button
      className={`btn small ${cls}`}
      disabled={!!deciding}
      aria-busy={deciding === d}
      data-testid={`approval-${d}`}
      onClick={() => decide(d)}
    >
      {deciding === d && <span className="spinner" aria-hidden="true" />}
      {text}
    </button>
  )

  return (
    <details
      className={`tool tool-${tool.status}`}
      data-testid="tool-call"
      data-status={tool.status}
      data-decision={tool.decision?.decision ?? ''}
      open={tool.status === 'awaiting_approval'}
    >
      <summary>
        <span className={`pill ${tool.status}`}>
          {(tool.status === 'running' || (awaiting && sent)) && <span className="spinner" aria-hidden="true" />}
          {label}
        </span>
        <code className="tool-name">{tool.name}</code>
        <span className="tool-args-preview">{oneLine(tool.args)}</span>
        {decision && (
          <span className={`approval-decision ${decision.decision}`} data-testid="approval-decision">
            {decisionText(t, decision)}
          </span>
        )}
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
        {awaiting && (
          <div className="approval" data-testid="approval">
            {showButtons && (
              <>
                {button('approve', 'primary', t('tool.approve'))}
                {button('always', '', t('tool.always'))}
                {button('deny', 'danger', t('tool.deny'))}
              </>
            )}
            {tool.expiresAt !== undefined && !sent && (
              <span className="muted" data-testid="approval-expiry">
                {tool.expiresAt > now
                  ? t('tool.expiresAt', { time: fmtClock(tool.expiresAt, lang, now), left: fmtLeft(tool.expiresAt - now) })
                  : t('tool.expiredAt', { time: fmtClock(tool.expiresAt, lang, now) })}
              </span>
            )}
            {err && (
              <span className="form-error" role="alert" data-testid="approval-error">
                {err}
              </span>
            )}
          </div>
        )}
      </div>
    </details>
  )
}
