// A memory's text box, for a new memory and for changing one: the character count
// (the server's 2,000), Ctrl/⌘+Enter to save and Esc to cancel, and what the server
// refused (a secret, too long, too many memories) shown under it — with everything
// typed still there. The form's other fields (kind, pin) are the caller's `children`.

import { useId, useState, type FormEvent, type KeyboardEvent, type ReactNode } from 'react'
import { useI18n } from '../i18n'
import { MAX_MEMORY_CHARS, checkMemoryText, memoryChars } from '../memory'
import { errText } from '../pages/useTurns'
import { CharCount } from './CharCount'

export interface MemoryEditorProps {
  initial?: string
  label: string
  placeholder?: string
  submitLabel: string
  /** Saves the trimmed text; what it throws is shown, and the text stays. */
  onSubmit: (text: string) => Promise<void>
  onCancel?: () => void
  /** Empty the box once saved (a new memory; an edited one closes instead). */
  clearOnSave?: boolean
  autoFocus?: boolean
  testid: string
  children?: ReactNode
}

export function MemoryEditor(p: MemoryEditorProps) {
  const { t } = useI18n()
  const [text, setText] = useState(p.initial ?? '')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const errorId = useId()
  const check = checkMemoryText(text)
  const problem = check === 'too_long' ? t('memory.tooLong', { max: MAX_MEMORY_CHARS.toLocaleString() }) : null
  const shownError = problem ?? (error && t('memory.notSaved', { message: error }))

  async function submit(e?: FormEvent) {
    e?.preventDefault()
    if (check !== 'ok' || busy) return
    setBusy(true)
    setError(null)
    try {
      await p.onSubmit(text.trim())
      if (p.clearOnSave) setText('')
    } catch (err) {
      setError(errText(err))
    } finally {
      setBusy(false)
    }
  }

  function onKeyDown(e: KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault()
      void submit()
    } else if (e.key === 'Escape' && p.onCancel) {
      e.preventDefault()
      p.onCancel()
    }
  }

  return (
    <form className="memory-editor" onSubmit={submit} data-testid={p.testid}>
      <textarea
        rows={3}
        value={text}
        autoFocus={p.autoFocus}
        placeholder={p.placeholder}
        aria-label={p.label}
        aria-invalid={shownError ? true : undefined}
        aria-describedby={shownError ? errorId : undefined}
        data-testid="memory-editor-text"
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
      />
      {shownError && (
        <p className="notice error" role="alert" id={errorId} data-testid="memory-editor-error">
          {shownError}
        </p>
      )}
      <div className="form-bar">
        {p.children}
        <span className="muted small memory-editor-hint">{t('memory.editorHint')}</span>
        <span className="spacer" />
        <CharCount n={memoryChars(text)} max={MAX_MEMORY_CHARS} testid="memory-editor-count" />
        {p.onCancel && (
          <button className="btn ghost" type="button" onClick={p.onCancel} data-testid="memory-editor-cancel">
            {t('memory.cancel')}
          </button>
        )}
        <button className="btn primary" type="submit" disabled={check !== 'ok' || busy} data-testid="memory-editor-save">
          {busy ? t('memory.saving') : p.submitLabel}
        </button>
      </div>
    </form>
  )
}
