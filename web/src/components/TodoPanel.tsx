import { useT } from '../i18n'
import type { TodoItem } from '../types'

/** How many items are done, of those not dropped. */
export function todoProgress(items: TodoItem[]): { done: number; total: number } {
  const kept = items.filter((i) => i.status !== 'cancelled')
  return { done: kept.filter((i) => i.status === 'done').length, total: kept.length }
}

const MARK: Record<TodoItem['status'], string> = {
  pending: '○',
  in_progress: '◐',
  done: '●',
  cancelled: '–',
}

const STATUS_KEY = {
  pending: 'todos.status.pending',
  in_progress: 'todos.status.in_progress',
  done: 'todos.status.done',
  cancelled: 'todos.status.cancelled',
} as const satisfies Record<TodoItem['status'], string>

/**
 * The agent's todo list for this conversation (`todo_update`): a checklist with
 * its progress, above the composer. It is the session's, so it stays through
 * compaction; undoing a turn shows the list from before it.
 */
export function TodoPanel({ items }: { items: TodoItem[] }) {
  const t = useT()
  if (!items.length) return null
  const { done, total } = todoProgress(items)
  return (
    <details className="todo-panel card" data-testid="todos" open>
      <summary>
        <strong>{t('todos.title')}</strong>{' '}
        <span className="muted" data-testid="todos-progress">
          {t('todos.progress', { done, total })}
        </span>
        <progress max={total || 1} value={done} aria-hidden="true" />
      </summary>
      <ol className="todo-items">
        {items.map((i) => (
          <li key={i.id} className={`todo ${i.status}`} data-testid="todo" data-status={i.status}>
            <span className="todo-mark" aria-label={t(STATUS_KEY[i.status])}>
              {MARK[i.status]}
            </span>{' '}
            <span className="todo-text">{i.text}</span>
          </li>
        ))}
      </ol>
    </details>
  )
}
