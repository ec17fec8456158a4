// The message box: Enter sends, Shift+Enter adds a line (and Enter while an IME is
// composing — Chinese input — is left to the IME). Model and agent pickers sit
// under it; while a reply runs, Stop is offered, Send queues, and "Send now"
// interrupts.

import { useEffect, useRef, useState, type KeyboardEvent } from 'react'
import { useT } from '../i18n'
import type { Agent, Model, Multitask } from '../types'
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
  onSend: (text: string, multitask?: Multitask) => Promise<boolean>
  onStop: () => void
}

export function Composer(p: ComposerProps) {
  const t = useT()
  const [text, setText] = useState('')
  const ref = useRef<HTMLTextAreaElement>(null)

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

  async function send(multitask?: Multitask) {
    const body = text.trim()
    if (!body) return
    setText('')
    const ok = await p.onSend(body, multitask)
    if (!ok) setText((cur) => cur || body)
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

  const empty = !text.trim()
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault()
        void send()
      }}
    >
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
        <button type="submit" className="btn primary" disabled={empty} data-testid="send">
          {p.running ? t('chat.queue') : t('chat.send')}
        </button>
      </div>
    </form>
  )
}
