// What a delegation card (components/DelegationCard.tsx) shows, apart from React so
// it can be tested alone (docs/protocol.md, "Delegation"): where a task handed to
// another agent stands, how its task reads folded, where its conversation is, and
// which of a step's tool calls the card stands in for — live, and in a finished
// reply read from history (`GET /v1/runs/{id}/delegations`).

import type { MessageKey } from './i18n'
import { delegationView, type DelegationView } from './stream/reducer'
import type { Delegation, Message } from './types'

/** The built-in tool whose calls hand a task to another agent: its card is the delegation card. */
export const DELEGATE = 'delegate'

/**
 * Where a delegation stands, as its card shows it: the status `agent_end` told, or
 * `unfinished` for one still `running` in a reply that ended (cancelled, failed)
 * before its end was told.
 */
export type DelegationState = DelegationView['status'] | 'unfinished'

export function delegationState(d: Pick<DelegationView, 'status'>, live: boolean): DelegationState {
  return d.status === 'running' && !live ? 'unfinished' : d.status
}

/** The pill's class and text for each state (the classes the tool cards use). */
export const STATE_PILL: Record<DelegationState, { cls: string; key: MessageKey }> = {
  running: { cls: 'running', key: 'delegation.working' },
  succeeded: { cls: 'ok', key: 'delegation.answered' },
  failed: { cls: 'failed', key: 'delegation.failed' },
  cancelled: { cls: 'cancelled', key: 'delegation.cancelled' },
  unfinished: { cls: 'cancelled', key: 'delegation.unfinished' },
}

/** The task's first line that says something, for the folded card. */
export function taskLine(task: string): string {
  return (
    task
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean) ?? ''
  )
}

/** Whether the folded line leaves some of the task out (the open card shows it whole). */
export function taskHasMore(task: string): boolean {
  return task.trim() !== taskLine(task)
}

/** Where the child's conversation opens (the chat page's route). */
export function childSessionPath(d: Pick<DelegationView, 'sessionId'>): string {
  return `/chat/${encodeURIComponent(d.sessionId)}`
}

/** Whether a delegation card stands in for this tool call: the `delegate` call it was told for. */
export function standsInForCall(delegations: readonly Pick<DelegationView, 'callId'>[], callId: string): boolean {
  return delegations.some((d) => d.callId === callId)
}

/**
 * Whether a stored reply handed tasks to other agents, so that its delegations are
 * worth reading: one of its calls is `delegate`.
 */
export function callsDelegate(messages: readonly Pick<Message, 'tool_calls'>[]): boolean {
  return messages.some((m) => m.tool_calls?.some((c) => c.name === DELEGATE))
}

/**
 * A finished reply's delegations by the `delegate` call each stands in for. Only a
 * stored call finds its card, so a task handed by an attempt that was retried (its
 * call never stored) shows nowhere; a call told twice keeps its newest delegation.
 */
export function delegationsByCall(stored: readonly Delegation[]): Map<string, DelegationView> {
  return new Map(stored.map((d) => [d.call_id, delegationView(d)]))
}
