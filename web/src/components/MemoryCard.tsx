// One memory on /memory: its text as Markdown, whether it is your profile (the fact
// the background extraction keeps up to date) or pinned, when it was
// added, changed and last carried by a reply's prompt, where it came from (the
// conversation, or by hand); pin/unpin, edit in place (text and kind), delete.

import { useState } from 'react'
import { Link } from 'react-router'
import { fmtClock, titleFrom } from '../format'
import { useI18n } from '../i18n'
import { KIND_TEXT, MEMORY_KINDS, isProfile, memoryOrigin, wasEdited } from '../memory'
import { errText } from '../pages/useTurns'
import type { Memory, MemoryKind, PatchMemory } from '../types'
import { Icon } from './Icon'
import { Markdown } from './Markdown'
import { MemoryEditor } from './MemoryEditor'
import { ErrorLine } from './Section'

export interface MemoryCardProps {
  memory: Memory
  /** Throws what the server refused. */
  onUpdate: (id: string, body: PatchMemory) => Promise<void>
  onRemove: (id: string) => Promise<void>
}

export function MemoryCard({ memory, onUpdate, onRemove }: MemoryCardProps) {
  const { t } = useI18n()
  const [editing, setEditing] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)

  async function act(fn: () => Promise<void>) {
    setBusy(true)
    setError(null)
    try {
      await fn()
    } catch (e) {
      setError(errText(e))
    } finally {
      setBusy(false)
    }
  }

  const togglePin = () => act(() => onUpdate(memory.id, { pinned: !memory.pinned }))
  const remove = () => {
    if (window.confirm(t('memory.confirmDelete', { text: titleFrom(memory.text) }))) void act(() => onRemove(memory.id))
  }

  const profile = isProfile(memory)
  return (
    <li
      className={`memory-card ${memory.pinned ? 'pinned' : ''} ${profile ? 'profile' : ''}`}
      data-testid="memory"
      data-id={memory.id}
      data-pinned={memory.pinned ? 'true' : undefined}
      data-profile={profile ? 'true' : undefined}
    >
      {profile && (
        <p className="memory-profile-head small" title={t('memory.profileHint')}>
          <span className="badge memory-profile" data-testid="memory-profile">
            {t('memory.profile')}
          </span>
          <span className="muted">{t('memory.profileAbout')}</span>
        </p>
      )}
      {editing ? (
        <EditMemory memory={memory} onUpdate={onUpdate} onDone={() => setEditing(false)} />
      ) : (
        <div className="md memory-text" data-testid="memory-text">
          <Markdown text={memory.text} />
        </div>
      )}
      <div className="memory-foot">
        <MemoryMeta memory={memory} />
        {!editing && (
          <div className="row-actions">
            <button
              className="btn ghost small"
              aria-pressed={memory.pinned}
              title={t('memory.pinHint')}
              disabled={busy}
              onClick={togglePin}
              data-testid="memory-pin"
            >
              {memory.pinned ? t('memory.unpin') : t('memory.pin')}
            </button>
            <button className="btn ghost small" disabled={busy} onClick={() => setEditing(true)} data-testid="memory-edit">
              <Icon name="edit" size={14} /> {t('memory.edit')}
            </button>
            <button className="btn ghost small danger-text" disabled={busy} onClick={remove} data-testid="memory-delete">
              {t('common.delete')}
            </button>
          </div>
        )}
      </div>
      <ErrorLine error={error} />
    </li>
  )
}

function EditMemory({ memory, onUpdate, onDone }: { memory: Memory; onUpdate: MemoryCardProps['onUpdate']; onDone: () => void }) {
  const { t } = useI18n()
  const [kind, setKind] = useState<MemoryKind>(memory.kind)

  async function save(text: string) {
    const body: PatchMemory = {}
    if (text !== memory.text) body.text = text
    if (kind !== memory.kind) body.kind = kind
    if (body.text !== undefined || body.kind !== undefined) await onUpdate(memory.id, body)
    onDone()
  }

  return (
    <MemoryEditor
      initial={memory.text}
      label={t('memory.editLabel')}
      submitLabel={t('memory.save')}
      onSubmit={save}
      onCancel={onDone}
      autoFocus
      testid="memory-edit-form"
    >
      <select aria-label={t('memory.kind')} value={kind} onChange={(e) => setKind(e.target.value as MemoryKind)} data-testid="memory-edit-kind">
        {MEMORY_KINDS.map((k) => (
          <option key={k} value={k}>
            {t(KIND_TEXT[k].name)}
          </option>
        ))}
      </select>
    </MemoryEditor>
  )
}

function MemoryMeta({ memory }: { memory: Memory }) {
  const { t } = useI18n()
  const origin = memoryOrigin(memory.source)
  return (
    <p className="memory-meta muted small" data-testid="memory-meta">
      {memory.pinned && (
        <span className="badge memory-pinned" data-testid="memory-pinned">
          {t('memory.pinned')}
        </span>
      )}
      <Stamp template={t('memory.created')} ms={memory.created_at} />
      {wasEdited(memory) && <Stamp template={t('memory.updated')} ms={memory.updated_at} />}
      {memory.last_used_at ? (
        <Stamp template={t('memory.lastUsed')} ms={memory.last_used_at} testid="memory-last-used" />
      ) : (
        <span data-testid="memory-last-used">{t('memory.neverUsed')}</span>
      )}
      {origin.type === 'conversation' ? (
        <Link to={origin.href} data-testid="memory-source">
          {t('memory.fromConversation')}
        </Link>
      ) : (
        <span data-testid="memory-source">{t('memory.manual')}</span>
      )}
    </p>
  )
}

/** "added 14:05" out of "added {when}": the moment a <time>, its full date on hover. */
function Stamp({ template, ms, testid }: { template: string; ms: number; testid?: string }) {
  const { lang } = useI18n()
  const [before, after = ''] = template.split('{when}')
  const d = new Date(ms)
  return (
    <span data-testid={testid}>
      {before}
      <time dateTime={d.toISOString()} title={d.toLocaleString(lang === 'zh' ? 'zh-CN' : 'en')}>
        {fmtClock(ms, lang)}
      </time>
      {after}
    </span>
  )
}
