// A plan the agent proposed in plan mode (`plan_proposed`): the plan as Markdown
// and, while the run waits for a decision, Approve, Reject and Revise — Revise
// opens a box for what to change (the server needs it). Then the decision and who
// made it ("Changes asked by alice: add tests"), or that nobody decided in time. A
// refused decision shows the server's message: a 409 (decided elsewhere, expired,
// the run ended) closes the card, a 422 leaves it open. It stands in for the
// step's text (which is the plan) and for its `propose_plan` call's tool card.
//
// `PlanCard` holds the state; `PlanCardView` only draws it, so each state can be
// rendered in a test.

import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react'
import { api } from '../api'
import { fmtClock, fmtLeft } from '../format'
import { useI18n } from '../i18n'
import { outcomeOf, outcomeText, planStatus, reviseComment } from '../plans'
import { refusalOf } from '../questions'
import type { PlanOutcome, PlanView } from '../stream/reducer'
import type { PlanDecision } from '../types'
import { Markdown } from './Markdown'
import { useNow } from './ToolCard'

export interface PlanCardState {
  /** the decision being sent */
  sending: PlanDecision | null
  /** the server's message when it refused the last decision */
  error: string | null
  /** the plan takes no decision any more (409) */
  closed: boolean
  /** our decision, accepted; the run resumes and `plan_decided` follows */
  sent: PlanOutcome | null
  /** the Revise box is open */
  revising: boolean
  comment: string
}

export interface PlanCardViewProps extends PlanCardState {
  plan: PlanView
  /** the run has not ended */
  live: boolean
  now: number
  onApprove: () => void
  onReject: () => void
  onRevise: () => void
  onCancelRevise: () => void
  onComment: (text: string) => void
  onSendRevise: () => void
}

export function PlanCard({ plan, live }: { plan: PlanView; live: boolean }) {
  const [state, setState] = useState<PlanCardState>({
    sending: null,
    error: null,
    closed: false,
    sent: null,
    revising: false,
    comment: '',
  })
  const open = live && !plan.decided && !state.sent && !state.closed
  const now = useNow(open && plan.expiresAt !== undefined, 10_000)

  async function decide(decision: PlanDecision, comment?: string) {
    if (state.sending) return
    setState((s) => ({ ...s, sending: decision, error: null }))
    try {
      const decided = await api.decidePlan(plan.planId, decision, comment)
      setState((s) => ({ ...s, sending: null, revising: false, sent: outcomeOf(decided) }))
    } catch (e) {
      const r = refusalOf(e)
      setState((s) => ({ ...s, sending: null, error: r.message, closed: s.closed || r.closed }))
    }
  }

  return (
    <PlanCardView
      {...state}
      plan={plan}
      live={live}
      now={now}
      onApprove={() => decide('approve')}
      onReject={() => decide('reject')}
      onRevise={() => setState((s) => ({ ...s, revising: true, error: null }))}
      onCancelRevise={() => setState((s) => ({ ...s, revising: false }))}
      onComment={(comment) => setState((s) => ({ ...s, comment }))}
      onSendRevise={() => {
        const comment = reviseComment(state.comment)
        if (comment !== null) void decide('revise', comment)
      }}
    />
  )
}

export function PlanCardView(p: PlanCardViewProps) {
  const { t, lang } = useI18n()
  const { plan, now } = p
  const outcome = plan.decided ?? p.sent
  const open = p.live && !outcome && !p.closed
  const busy = p.sending !== null
  const status = planStatus(plan)
  const spinner = <span className="spinner" aria-hidden="true" />
  const box = useRef<HTMLTextAreaElement>(null)
  useEffect(() => {
    if (p.revising) box.current?.focus()
  }, [p.revising])

  const submitRevise = (e: FormEvent) => {
    e.preventDefault()
    p.onSendRevise()
  }
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault()
      p.onSendRevise()
    } else if (e.key === 'Escape') {
      e.preventDefault()
      p.onCancelRevise()
    }
  }

  const pill = open
    ? { cls: 'awaiting_approval', text: t('plan.waiting') }
    : outcome?.status === 'approved'
      ? { cls: 'ok', text: t('plan.pillApproved') }
      : outcome?.status === 'revised'
        ? { cls: 'revised', text: t('plan.pillRevised') }
        : outcome?.status === 'rejected'
          ? { cls: 'failed', text: t('plan.pillRejected') }
          : outcome?.status === 'expired'
            ? { cls: 'failed', text: t('tool.expired') }
            : { cls: '', text: t('plan.pillClosed') }

  return (
    <section
      className={`plan plan-${status}`}
      data-testid="plan-card"
      data-status={status}
      data-plan-id={plan.planId}
      aria-busy={busy}
      aria-label={t('plan.proposes')}
    >
      <div className="plan-head">
        <span className={`pill ${pill.cls}`} data-testid="plan-state">
          {pill.text}
        </span>
        <span className="muted small">{t('plan.proposes')}</span>
      </div>
      <div className="md plan-body" data-testid="plan-markdown">
        <Markdown text={plan.markdown} />
      </div>
      {open && !p.revising && (
        <div className="plan-actions" role="group" aria-label={t('plan.proposes')}>
          <button
            type="button"
            className="btn primary"
            disabled={busy}
            aria-busy={p.sending === 'approve'}
            title={t('plan.approveHint')}
            data-testid="plan-approve"
            onClick={p.onApprove}
          >
            {p.sending === 'approve' && spinner}
            {t('plan.approve')}
          </button>
          <button
            type="button"
            className="btn"
            disabled={busy}
            title={t('plan.reviseHint')}
            data-testid="plan-revise"
            onClick={p.onRevise}
          >
            {t('plan.revise')}
          </button>
          <button
            type="button"
            className="btn danger-text"
            disabled={busy}
            aria-busy={p.sending === 'reject'}
            title={t('plan.rejectHint')}
            data-testid="plan-reject"
            onClick={p.onReject}
          >
            {p.sending === 'reject' && spinner}
            {t('plan.reject')}
          </button>
        </div>
      )}
      {open && p.revising && (
        <form className="plan-revise" onSubmit={submitRevise}>
          <label className="muted small" htmlFor={`plan-comment-${plan.planId}`}>
            {t('plan.comment')}
          </label>
          <textarea
            id={`plan-comment-${plan.planId}`}
            ref={box}
            rows={3}
            value={p.comment}
            placeholder={t('plan.commentPlaceholder')}
            disabled={busy}
            data-testid="plan-comment"
            onChange={(e) => p.onComment(e.target.value)}
            onKeyDown={onKey}
          />
          <div className="plan-actions">
            <button
              type="submit"
              className="btn primary"
              disabled={busy || reviseComment(p.comment) === null}
              aria-busy={p.sending === 'revise'}
              data-testid="plan-revise-send"
            >
              {p.sending === 'revise' && spinner}
              {t('plan.sendRevise')}
            </button>
            <button type="button" className="btn ghost" disabled={busy} onClick={p.onCancelRevise}>
              {t('plan.cancel')}
            </button>
          </div>
        </form>
      )}
      {open && plan.expiresAt !== undefined && (
        <p className="muted small plan-expiry" data-testid="plan-expiry">
          {plan.expiresAt > now
            ? t('plan.expiresAt', { time: fmtClock(plan.expiresAt, lang, now), left: fmtLeft(plan.expiresAt - now) })
            : t('plan.expiredAt', { time: fmtClock(plan.expiresAt, lang, now) })}
        </p>
      )}
      {outcome && (
        <p className={`plan-outcome ${outcome.status}`} data-testid="plan-outcome">
          {outcomeText(t, outcome)}
          {!plan.decided && p.live && (
            <span className="muted">
              {' '}
              {spinner} {t('tool.resuming')}
            </span>
          )}
        </p>
      )}
      {!outcome && !p.live && (
        <p className="plan-outcome muted" data-testid="plan-outcome">
          {t('plan.undecided')}
        </p>
      )}
      {p.error && (
        <p className="form-error" role="alert" data-testid="plan-error">
          {p.error}
        </p>
      )}
    </section>
  )
}
