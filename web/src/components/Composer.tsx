// The message box: Enter sends, Shift+Enter adds a line (and Enter while an IME is
// composing — Chinese input — is left to the IME). Model and agent pickers sit
// under it; while a reply runs, Stop is offered, Send queues, and "Send now"
// interrupts. Files are attached with the 📎 button, by pasting (an image copied
// to the clipboard) or by dropping them on the chat (`useFileDrop`); the chat
// owns them (`useDrafts`), as a send takes them along and a failed one gives them back.
//
// "Plan first" (plan mode) asks for a plan before anything is done, for the next
// message only: the toggle turns itself off once that message is sent (and back on
// if the send failed, with the text). A plan never waits behind a running reply
// (the server refuses to queue one), so while one runs only "Send now" sends it.

import { useEffect, useRef, useState, type ClipboardEvent, type KeyboardEvent } from 'react'
import { pastedFiles, problemText } from '../attachments'
import { fmtBytes } from '../format'
import { useT } from '../i18n'
import type { Drafts } from '../pages/useDrafts'
import type { Agent, Model, Multitask } from '../types'
import { DraftList } from './Attachments'
import { Icon } from './Icon'

export interface ComposerProps {
  models: Model[]
  agents: Agent[]
  model: string
  agent: string
  onModel: (m: string) => void
  onAgent: (a: string) => void
  running: boolean
  stopping: boolean
  /** the files to go with the message */
  drafts: Drafts
  /** sends the text with `drafts`; false when it failed (the text is put back) */
  onSend: (text: string, opts: SendOptions) => Promise<boolean>
  onStop: () => void
}

export interface SendOptions {
  /** what to do with a reply already running (the server's default: queue behind it) */
  multitask?: Multitask
  /** plan mode: a plan to approve before anything is done */
  plan: boolean
}

export function Composer(p: ComposerProps) {
  const t = useT()
  const [text, setText] = useState('')
  const [plan, setPlan] = useState(false)
  const ref = useRef<HTMLTextAreaElement>(null)
  const picker = useRef<HTMLInputElement>(null)
  const { drafts } = p

  useEffect(() => {
    ref.current?.focus()
  }, [])

  // Grow with the text, up to a limit set in CSS.
  useEffect(() => {
    const el = ref.current
    if (!el) return
    el.style.height = 'auto'
    el.style.height = `${el.scrollHeight}px`
  }, [text])

  // A plan is never queued behind a running reply.
  const planBlocked = plan && p.running

  async function send(multitask?: Multitask) {
    const body = text.trim()
    if (!body && !drafts.items.length) return
    if (planBlocked && multitask !== 'interrupt') return
    const planned = plan
    setText('')
    setPlan(false)
    const ok = await p.onSend(body, { multitask, plan: planned })
    if (!ok) {
      setText((cur) => cur || body)
      if (planned) setPlan(true)
    }
    ref.current?.focus()
  }

  function onKey(e: KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing && e.keyCode !== 229) {
      e.preventDefault()
      void send()
    } else if (e.key === 'Escape' && p.running) {
      e.preventDefault()
      p.onStop()
    }
  }

  function onPaste(e: ClipboardEvent) {
    const files = pastedFiles(e.clipboardData)
    if (!files.length) return
    e.preventDefault()
    drafts.addPasted(files)
  }

  const empty = !text.trim() && !drafts.items.length
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault()
        void send()
      }}
      onPaste={onPaste}
    >
      <DraftList items={drafts.items} onRemove={drafts.remove} />
      {drafts.problems.length > 0 && (
        <div className="notice error attach-problems" role="alert" data-testid="attach-problem">
          <ul>
            {drafts.problems.map((pr, i) => (
              <li key={i}>{problemText(pr, t, fmtBytes)}</li>
            ))}
          </ul>
          <button type="button" className="btn ghost small" onClick={drafts.dismissProblems}>
            {t('common.close')}
          </button>
        </div>
      )}
      <textarea
        ref={ref}
        data-testid="composer"
        rows={1}
        value={text}
        placeholder={t('chat.placeholder')}
        aria-label={t('chat.placeholder')}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKey}
      />
      <div className="composer-bar">
        <button
          type="button"
          className="btn ghost attach"
          onClick={() => picker.current?.click()}
          title={t('attach.addHint')}
          aria-label={t('attach.add')}
          data-testid="attach"
        >
          <Icon name="attach" size={16} />
        </button>
        <input
          ref={picker}
          type="file"
          multiple
          hidden
          data-testid="attach-input"
          onChange={(e) => {
            const files = Array.from(e.target.files ?? [])
            // The same file may be picked again after it was removed.
            e.target.value = ''
            if (files.length) drafts.add(files)
            ref.current?.focus()
          }}
        />
        <label className="picker">
          <span>{t('chat.model')}</span>
          <select value={p.model} onChange={(e) => p.onModel(e.target.value)} data-testid="model-picker">
            {p.models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.id}
                {m.provider === 'mock' ? ' (demo)' : ''}
              </option>
            ))}
          </select>
        </label>
        <label className="picker">
          <span>{t('chat.agent')}</span>
          <select value={p.agent} onChange={(e) => p.onAgent(e.target.value)} data-testid="agent-picker">
            {p.agents.map((a) => (
              <option key={a.id} value={a.id} title={a.description}>
                {a.default ? t('chat.agentDefault', { name: a.name || a.id }) : a.name || a.id}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          className="btn small plan-toggle"
          aria-pressed={plan}
          title={t('chat.planFirstHint')}
          data-testid="plan-toggle"
          onClick={() => setPlan((on) => !on)}
        >
          {t('chat.planFirst')}
        </button>
        <span className="spacer" />
        {p.running && (
          <button
            type="button"
            className="btn danger"
            onClick={p.onStop}
            disabled={p.stopping}
            data-testid="stop"
            aria-keyshortcuts="Escape"
          >
            {p.stopping ? t('chat.stopping') : <>
                <Icon name="stop" size={14} /> {t('chat.stop')}
              </>}
          </button>
        )}
        {p.running && !empty && (
          <button
            type="button"
            className="btn"
            title={t('chat.interruptHint')}
            onClick={() => void send('interrupt')}
            data-testid="send-now"
          >
            {t('chat.interrupt')}
          </button>
        )}
        <button
          type="submit"
          className="btn primary"
          disabled={empty || planBlocked}
          aria-describedby={planBlocked ? 'plan-hint' : undefined}
          data-testid="send"
        >
          {p.running ? t('chat.queue') : t('chat.send')}
        </button>
      </div>
      {planBlocked && (
        <p className="muted small plan-hint" id="plan-hint" data-testid="plan-hint">
          {t('chat.planNeedsIdle')}
        </p>
      )}
    </form>
  )
}
