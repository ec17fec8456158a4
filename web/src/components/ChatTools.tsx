// The chat's conversation-level controls: Undo and Redo of the newest turn,
// Compact (summarise older turns before the next reply), the system-prompt preview
// (with the memories at its end),
// the note that shows a stored summary, and the bar under the newest reply
// (Regenerate and the "‹ 2/3 ›" switch between its alternatives).

import { useEffect, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api'
import { fmtDate, titleFrom } from '../format'
import { useI18n, useT } from '../i18n'
import { KIND_TEXT } from '../memory'
import type { AltNav } from '../turns'
import type { MemoryRef, Summary, SystemPrompt } from '../types'
import { Icon } from './Icon'

export interface ChatToolsProps {
  /** a run is active or an action is under way: undo, redo are refused */
  busy: boolean
  canUndo: boolean
  canCompact: boolean
  promptOpen: boolean
  /** the knowledge bases the session searches besides its agent's, and their panel */
  knowledgeCount: number
  knowledgeOpen: boolean
  onToggleKnowledge: () => void
  onUndo: () => void
  onRedo: () => void
  onCompact: () => void
  onTogglePrompt: () => void
}

export function ChatTools(p: ChatToolsProps) {
  const t = useT()
  return (
    <div className="chat-tools" role="toolbar" aria-label={t('chat.tools')}>
      <button
        className="btn ghost small"
        onClick={p.onUndo}
        disabled={p.busy || !p.canUndo}
        title={t('chat.undoHint')}
        aria-label={t('chat.undo')}
        data-testid="undo"
      >
        <Icon name="undo" size={14} /> <span className="tool-label">{t('chat.undo')}</span>
      </button>
      <button
        className="btn ghost small"
        onClick={p.onRedo}
        disabled={p.busy}
        title={t('chat.redoHint')}
        aria-label={t('chat.redo')}
        data-testid="redo"
      >
        <Icon name="redo" size={14} /> <span className="tool-label">{t('chat.redo')}</span>
      </button>
      <button
        className="btn ghost small"
        onClick={p.onCompact}
        disabled={!p.canCompact}
        title={t('chat.compactHint')}
        aria-label={t('chat.compact')}
        data-testid="compact"
      >
        <Icon name="compact" size={14} /> <span className="tool-label">{t('chat.compact')}</span>
      </button>
      <button
        className="btn ghost small"
        onClick={p.onTogglePrompt}
        aria-expanded={p.promptOpen}
        aria-controls="system-prompt"
        title={t('chat.systemPromptHint')}
        aria-label={t('chat.systemPrompt')}
        data-testid="system-prompt-toggle"
      >
        <Icon name="prompt" size={14} /> <span className="tool-label">{t('chat.systemPrompt')}</span>
      </button>
      <button
        className="btn ghost small"
        onClick={p.onToggleKnowledge}
        aria-expanded={p.knowledgeOpen}
        aria-controls="session-knowledge"
        title={t('chat.knowledgeHint')}
        aria-label={t('chat.knowledge')}
        data-testid="session-knowledge-toggle"
      >
        <Icon name="file" size={14} /> <span className="tool-label">{t('chat.knowledge')}</span>
        {p.knowledgeCount > 0 && <span className="badge" data-testid="session-knowledge-count">{p.knowledgeCount}</span>}
      </button>
    </div>
  )
}

/**
 * Exactly what the session's model is sent, read when opened and again when the
 * agent changes; under it, the memories at its end (those every turn gets).
 */
export function SystemPromptPanel({ sessionId, agent, onClose }: { sessionId?: string; agent: string; onClose: () => void }) {
  const t = useT()
  const [prompt, setPrompt] = useState<SystemPrompt | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    if (!sessionId) return
    let live = true
    setError(null)
    api
      .systemPrompt(sessionId)
      .then((p) => live && setPrompt(p))
      .catch((e) => live && setError(e instanceof Error ? e.message : String(e)))
    return () => {
      live = false
    }
  }, [sessionId, agent])
  return (
    <section className="prompt-panel" id="system-prompt" data-testid="system-prompt" aria-label={t('chat.systemPrompt')}>
      <div className="prompt-head">
        <strong>{t('chat.systemPrompt')}</strong>
        {prompt && <span className="muted small">{t('chat.systemPromptOf', { agent: prompt.agent })}</span>}
        <span className="spacer" />
        <button className="btn ghost small" onClick={onClose}>
          {t('common.close')}
        </button>
      </div>
      {!sessionId && <p className="muted">{t('chat.systemPromptNew')}</p>}
      {error && <p className="notice error">{t('common.error', { message: error })}</p>}
      {sessionId && !prompt && !error && <p className="muted">{t('chat.loading')}</p>}
      {prompt && <pre data-testid="system-prompt-text">{prompt.system_prompt}</pre>}
      {!!prompt?.memories?.length && <PromptMemories memories={prompt.memories} />}
    </section>
  )
}

/** The memories at the end of the prompt, a line each (the whole text on hover and in the prompt). */
function PromptMemories({ memories }: { memories: MemoryRef[] }) {
  const t = useT()
  return (
    <div className="prompt-memories small" data-testid="system-prompt-memories">
      <span className="muted">{t('chat.systemPromptMemories', { n: memories.length })}</span>
      <ul>
        {memories.map((m) => (
          <li key={m.id} data-kind={m.kind} title={m.text} data-testid="system-prompt-memory">
            <span className="badge">{t(KIND_TEXT[m.kind].name)}</span>
            {titleFrom(m.text)}
          </li>
        ))}
      </ul>
      <Link to="/memory">{t('chat.memoriesManage')}</Link>
    </div>
  )
}

/** "Earlier in this conversation": the stored summary the model reads instead of the older turns. */
export function SummaryNote({ summary }: { summary: Summary }) {
  const { t, lang } = useI18n()
  return (
    <details className="summary-note" data-testid="summary">
      <summary>
        {t('chat.summaryTitle')}{' '}
        <span className="muted">
          · {t('chat.summaryMeta', { n: summary.messages, model: summary.model, when: fmtDate(summary.created_at, lang) })}
        </span>
      </summary>
      <div className="summary-body" data-testid="summary-text">
        {summary.summary}
      </div>
    </details>
  )
}

export interface TurnBarProps {
  nav: AltNav | null
  /** a run is active or an action is under way */
  busy: boolean
  onRegenerate: () => void
  onChoose: (runId: string) => void
}

/** Under the newest reply: regenerate it, and switch between its alternatives. */
export function TurnBar({ nav, busy, onRegenerate, onChoose }: TurnBarProps) {
  const t = useT()
  return (
    <div className="turn-bar" data-testid="turn-bar">
      {nav && (
        <span className="alt-nav" data-testid="alternatives">
          <button
            className="btn ghost small"
            disabled={busy || !nav.prev}
            onClick={() => nav.prev && onChoose(nav.prev)}
            aria-label={t('chat.altPrev')}
            title={t('chat.altPrev')}
            data-testid="alt-prev"
          >
            <Icon name="left" size={14} />
          </button>
          <span data-testid="alt-position" aria-label={t('chat.altLabel', { n: nav.position, total: nav.total })}>
            {nav.position}/{nav.total}
          </span>
          <button
            className="btn ghost small"
            disabled={busy || !nav.next}
            onClick={() => nav.next && onChoose(nav.next)}
            aria-label={t('chat.altNext')}
            title={t('chat.altNext')}
            data-testid="alt-next"
          >
            <Icon name="right" size={14} />
          </button>
        </span>
      )}
      <button
        className="btn ghost small"
        onClick={onRegenerate}
        disabled={busy}
        title={t('chat.regenerateHint')}
        data-testid="regenerate"
      >
        <Icon name="regenerate" size={14} /> {t('chat.regenerate')}
      </button>
    </div>
  )
}
