// A user's message; while not yet part of a run it shows "sending…" or "queued".
// Its files are shown above the text (a message may be files alone). The newest
// one can be edited in place (✎): saving replaces its text on the server and the
// question is answered again.

import { useEffect, useRef, useState, type KeyboardEvent } from 'react'
import type { Draft, ShownFile } from '../attachments'
import { useT } from '../i18n'
import { MessageFiles } from './Attachments'
import { Icon } from './Icon'
import { Markdown } from './Markdown'

/** A message of ours the server has not (yet) tied to a run. */
export interface Pending {
  key: string
  text: string
  status: 'sending' | 'queued'
  messageId?: string
  /** the files sent with it, shown from this tab's copies */
  files: Draft[]
}

export interface UserMessageProps {
  text: string
  files?: ShownFile[]
  status?: Pending['status']
  /** offered on the newest message: save the new text (false: keep the editor open) */
  onEdit?: (text: string) => Promise<boolean>
  /** a run is active: the ✎ button is shown but disabled */
  editDisabled?: boolean
  /** who wrote it, in a conversation several people share (a Lark group) */
  author?: string | null
}

export function UserMessage({ text, files, status, onEdit, editDisabled, author }: UserMessageProps) {
  const t = useT()
  const [draft, setDraft] = useState<string | null>(null)
  const [saving, setSaving] = useState(false)
  const ref = useRef<HTMLTextAreaElement>(null)

  useEffect(() => {
    const el = ref.current
    if (!el) return
    el.style.height = 'auto'
    el.style.height = `${el.scrollHeight}px`
  }, [draft])

  async function save() {
    const body = draft?.trim()
    if (!body || !onEdit) return
    if (body === text.trim()) {
      setDraft(null)
      return
    }
    setSaving(true)
    const ok = await onEdit(body)
    setSaving(false)
    if (ok) setDraft(null)
  }

  function onKey(e: KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing && e.keyCode !== 229) {
      e.preventDefault()
      void save()
    } else if (e.key === 'Escape') {
      e.preventDefault()
      setDraft(null)
    }
  }

  if (draft !== null) {
    return (
      <article className="msg user editing" data-testid="user-message" data-status="editing">
        <form
          className="edit-form"
          onSubmit={(e) => {
            e.preventDefault()
            void save()
          }}
        >
          <textarea
            ref={ref}
            autoFocus
            rows={1}
            value={draft}
            aria-label={t('chat.editLabel')}
            data-testid="edit-text"
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={onKey}
          />
          <div className="edit-bar">
            <span className="muted small">{t('chat.editHint')}</span>
            <button type="button" className="btn ghost small" onClick={() => setDraft(null)}>
              {t('sessions.cancel')}
            </button>
            <button
              type="submit"
              className="btn primary small"
              disabled={saving || editDisabled || !draft.trim()}
              data-testid="edit-save"
            >
              {t('chat.editSave')}
            </button>
          </div>
        </form>
      </article>
    )
  }

  return (
    <article className={`msg user ${status ?? ''}`} data-testid="user-message" data-status={status ?? 'sent'}>
      {author && (
        <p className="msg-author muted small" data-testid="message-author">
          {author}
        </p>
      )}
      <MessageFiles files={files} />
      {(text.trim() || !files?.length) && (
        <div className="bubble md">
          <Markdown text={text} />
        </div>
      )}
      {status === 'queued' && (
        <p className="badge queued" data-testid="queued">
          <Icon name="clock" size={13} /> {t('chat.queued')}
        </p>
      )}
      {status === 'sending' && <p className="muted small">{t('chat.sending')}</p>}
      {onEdit && (
        <button
          type="button"
          className="btn ghost small msg-action"
          onClick={() => setDraft(text)}
          disabled={editDisabled}
          title={t('chat.editHint')}
          data-testid="edit"
        >
          <Icon name="edit" size={13} /> {t('chat.edit')}
        </button>
      )}
    </article>
  )
}
