// What a plan card (components/PlanCard.tsx) sends and says, apart from React so it
// can be tested alone (plan mode: `plan_proposed`, `POST /v1/plans/{id}`): the
// revise comment, how a decision reads, where a plan stands, and which of a step's
// text and tool calls the card stands in for. A refused decision is read as a
// refused answer is (`refusalOf` in questions.ts): a 409 closes the card, a 422
// leaves it open.

import type { MessageKey, Translate } from './i18n'
import type { PlanOutcome, PlanView } from './stream/reducer'
import type { Plan } from './types'

/** The built-in tool whose calls are plans: its card is the plan card. */
export const PROPOSE_PLAN = 'propose_plan'

/** A revise's comment, trimmed; null when there is nothing to send (the server needs one). */
export function reviseComment(text: string): string | null {
  const t = text.trim()
  return t ? t : null
}

/** Where the plan stands, for `data-status`: `proposed` until a decision is told. */
export function planStatus(p: Pick<PlanView, 'decided'>): string {
  return p.decided?.status ?? 'proposed'
}

/**
 * "Approved by alice", "Rejected by alice: too risky", "Changes asked by alice: add
 * tests", or "Nobody decided in time".
 */
export function outcomeText(t: Translate, o: PlanOutcome): string {
  if (o.status === 'expired') return t('plan.expired')
  // Not a decision; a server that told it would mean the plan still waits.
  if (o.status === 'proposed') return t('plan.waiting')
  const [byKey, aloneKey] = OUTCOME_KEYS[o.status]
  const decision = o.by ? t(byKey, { by: o.by }) : t(aloneKey)
  return o.comment ? t('plan.withComment', { decision, comment: o.comment }) : decision
}

const OUTCOME_KEYS: Record<'approved' | 'rejected' | 'revised', [MessageKey, MessageKey]> = {
  approved: ['plan.approvedBy', 'plan.approved'],
  rejected: ['plan.rejectedBy', 'plan.rejected'],
  revised: ['plan.revisedBy', 'plan.revised'],
}

/** What our own accepted decision (the 200's plan) stands for until `plan_decided` arrives. */
export function outcomeOf(p: Plan): PlanOutcome {
  return { status: p.status, comment: p.comment ?? null, by: p.decided_by ?? null }
}

/**
 * Whether a step's text is its plan, so that only the card shows it: the worker
 * proposes the step's text, and streams it first as the step's text.
 */
export function textIsPlan(text: string, plans: readonly Pick<PlanView, 'markdown'>[]): boolean {
  const said = text.trim()
  return plans.some((p) => p.markdown.trim() === said)
}

/**
 * Whether the plan card stands in for this tool call of the step: the `propose_plan`
 * call of a plan (by its id, or by name for a plan read over HTTP, which has none).
 */
export function standsInForCall(
  plans: readonly Pick<PlanView, 'callId'>[],
  call: { callId: string; name: string },
): boolean {
  if (!plans.length) return false
  return plans.some((p) => p.callId === call.callId) || call.name === PROPOSE_PLAN
}
