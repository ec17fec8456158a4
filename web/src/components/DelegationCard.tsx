// A task the agent handed to another agent (`delegate`, `agent_start`), folded into
// the reply: the agent, the task's first line and where it stands ("working…",
// answered, failed, cancelled). Opened, it shows the whole task, the child run
// itself — attached to its events only while open, so a reply with many children
// holds no stream for the folded ones — and a link to the child's conversation. It
// stands in for its `delegate` call's tool card: the call's result is the child's
// answer, which the open card shows as the child says it.
//
// `DelegationCard` holds whether it is open; `DelegationCardView` only draws it, so
// each state can be rendered in a test.

import { useState, type ReactNode } from 'react'
import { Link } from 'react-router'
import { STATE_PILL, childSessionPath, delegationState, taskHasMore, taskLine } from '../delegations'
import { useT } from '../i18n'
import type { DelegationView } from '../stream/reducer'
import { Icon } from './Icon'

export interface DelegationCardProps {
  delegation: DelegationView
  /** the agent's display name */
  name: string
  /** the reply has not ended */
  live: boolean
  /** the child's run as the open card shows it; mounted only while open */
  child: ReactNode
}

export interface DelegationCardViewProps extends DelegationCardProps {
  open: boolean
  onToggle: (open: boolean) => void
}

export function DelegationCard(p: DelegationCardProps) {
  const [open, setOpen] = useState(false)
  return <DelegationCardView {...p} open={open} onToggle={setOpen} />
}

export function DelegationCardView({ delegation: d, name, live, child, open, onToggle }: DelegationCardViewProps) {
  const t = useT()
  const state = delegationState(d, live)
  const pill = STATE_PILL[state]
  const icon =
    state === 'running' ? (
      <span className="spinner" aria-hidden="true" />
    ) : state === 'succeeded' ? (
      <Icon name="check" size={12} />
    ) : state === 'failed' ? (
      <Icon name="close" size={12} />
    ) : (
      <Icon name="stop" size={10} />
    )
  return (
    <details
      className={`delegation delegation-${state}`}
      data-testid="delegation"
      data-status={state}
      data-agent={d.agent}
      data-delegation-id={d.delegationId}
      data-child-run-id={d.runId}
      aria-label={t('delegation.label', { name })}
      open={open}
      onToggle={(e) => onToggle(e.currentTarget.open)}
    >
      <summary>
        <span className={`pill ${pill.cls}`} data-testid="delegation-state">
          {icon}
          {t(pill.key)}
        </span>
        <strong className="delegation-agent" data-testid="delegation-agent">
          {name}
        </strong>
        <span className="delegation-task-line" data-testid="delegation-task-line" title={d.task}>
          {taskLine(d.task)}
        </span>
      </summary>
      <div className="delegation-body">
        {taskHasMore(d.task) && (
          <>
            <div className="tool-section">{t('delegation.task')}</div>
            <pre className="delegation-task" data-testid="delegation-task">
              {d.task}
            </pre>
          </>
        )}
        <div className="tool-section">{t('delegation.reply', { name })}</div>
        <div className="delegation-run">{open && child}</div>
        <Link className="small" to={childSessionPath(d)} data-testid="delegation-open">
          {t('delegation.open')}
        </Link>
      </div>
    </details>
  )
}
