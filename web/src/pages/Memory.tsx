// /memory: what the assistant remembers about you (docs/memory.md) — your switch,
// a search, one tab per kind (facts, episodes, procedures; `?kind=` in the URL) with
// its count, adding a memory of the tab's kind, each memory (`MemoryCard.tsx`),
// the export as a JSON file and "forget everything" (`ForgetMemories.tsx`). The
// data and the writes are `useMemories.ts`; the rules are `memory.ts`.

import { useRef, useState, type KeyboardEvent } from 'react'
import { useSearchParams } from 'react-router'
import { api } from '../api'
import { ForgetMemories } from '../components/ForgetMemories'
import { MemoryCard } from '../components/MemoryCard'
import { MemoryEditor } from '../components/MemoryEditor'
import { ErrorLine } from '../components/Section'
import { useI18n } from '../i18n'
import { KIND_TEXT, MEMORY_KINDS, countByKind, exportFile, kindFromParam } from '../memory'
import type { MemoryKind } from '../types'
import { useMemories } from './useMemories'
import { errText } from './useTurns'

const PANEL_ID = 'memory-panel'
const tabId = (k: MemoryKind) => `memory-tab-${k}`

export function MemoryPage() {
  const { t } = useI18n()
  const [params, setParams] = useSearchParams()
  const kind = kindFromParam(params.get('kind'))
  const m = useMemories()
  const memories = m.shown?.memories ?? []
  const ofKind = memories.filter((x) => x.kind === kind)

  const pick = (k: MemoryKind) =>
    setParams(
      (p) => {
        p.set('kind', k)
        return p
      },
      { replace: true },
    )

  async function download() {
    m.setError(null)
    try {
      const f = exportFile(await api.exportMemories(), new Date())
      saveFile(f.name, f.json, 'application/json')
    } catch (e) {
      m.setError(errText(e))
    }
  }

  const toggle = (on: boolean) => m.setEnabled(on).catch((e) => m.setError(errText(e)))

  return (
    <div className="page memory">
      <h1>{t('memory.title')}</h1>
      <p className="muted">{t('memory.hint')}</p>
      {m.shown && <MemorySwitch enabled={m.shown.enabled} available={m.shown.available} onChange={toggle} />}
      <div className="memory-tools">
        <input
          type="search"
          className="search"
          placeholder={t('memory.search')}
          aria-label={t('memory.search')}
          value={m.q}
          onChange={(e) => m.setQ(e.target.value)}
          data-testid="memory-search"
        />
        <button className="btn" onClick={download} title={t('memory.exportHint')} data-testid="memory-export">
          {t('memory.export')}
        </button>
      </div>
      <ErrorLine error={m.error} />
      <KindTabs kind={kind} counts={countByKind(memories)} onPick={pick} />
      <div role="tabpanel" id={PANEL_ID} aria-labelledby={tabId(kind)} className="memory-panel">
        <p className="muted small">{t(KIND_TEXT[kind].about)}</p>
        <AddMemory kind={kind} onAdd={(text, pinned) => m.add({ text, kind, pinned })} />
        {!m.shown ? (
          !m.error && <p className="muted">{t('chat.loading')}</p>
        ) : ofKind.length === 0 ? (
          <p className="muted" data-testid="memory-none">
            {m.shown.query ? t('memory.noMatch', { q: m.shown.query }) : t('memory.none')}
          </p>
        ) : (
          <ul className="memory-list" data-testid="memory-list" aria-busy={m.loading}>
            {ofKind.map((x) => (
              <MemoryCard key={x.id} memory={x} onUpdate={m.update} onRemove={m.remove} />
            ))}
          </ul>
        )}
      </div>
      <ForgetMemories onForget={m.forgetAll} />
    </div>
  )
}

/** Your switch: shows the new position at once, and goes back to the server's if it refuses. */
function MemorySwitch(p: { enabled: boolean; available: boolean; onChange: (on: boolean) => Promise<unknown> }) {
  const { t } = useI18n()
  const [asked, setAsked] = useState<boolean | null>(null)
  async function change(on: boolean) {
    setAsked(on)
    await p.onChange(on)
    setAsked(null)
  }
  return (
    <div className="card memory-switch">
      <label className="check">
        <input
          type="checkbox"
          role="switch"
          checked={asked ?? p.enabled}
          disabled={asked !== null}
          onChange={(e) => void change(e.target.checked)}
          data-testid="memory-switch"
        />
        <strong>{t('memory.switch')}</strong>
      </label>
      <p className="muted small" data-testid="memory-switch-state" data-enabled={p.enabled}>
        {p.enabled ? t('memory.switchOn') : t('memory.switchOff')}
      </p>
      {!p.available && (
        <p className="notice warn" data-testid="memory-unavailable">
          {t('memory.unavailable')}
        </p>
      )}
    </div>
  )
}

/** The three kinds as tabs (arrow keys, Home and End move between them), each with its count. */
function KindTabs({ kind, counts, onPick }: { kind: MemoryKind; counts: Record<MemoryKind, number>; onPick: (k: MemoryKind) => void }) {
  const { t } = useI18n()
  const refs = useRef<Partial<Record<MemoryKind, HTMLButtonElement | null>>>({})

  function onKeyDown(e: KeyboardEvent) {
    const i = MEMORY_KINDS.indexOf(kind)
    const n = MEMORY_KINDS.length
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1 + n, Home: 0, End: n - 1 }[e.key]
    if (to === undefined) return
    e.preventDefault()
    const next = MEMORY_KINDS[to % n]
    onPick(next)
    refs.current[next]?.focus()
  }

  return (
    <div role="tablist" className="memory-tabs" aria-label={t('memory.kinds')} onKeyDown={onKeyDown}>
      {MEMORY_KINDS.map((k) => (
        <button
          key={k}
          ref={(el) => {
            refs.current[k] = el
          }}
          role="tab"
          id={tabId(k)}
          aria-selected={k === kind}
          aria-controls={PANEL_ID}
          tabIndex={k === kind ? 0 : -1}
          className="memory-tab"
          onClick={() => onPick(k)}
          data-testid={`memory-tab-${k}`}
        >
          {t(KIND_TEXT[k].tab)}
          <span className="memory-count" data-testid="memory-count">
            {counts[k]}
          </span>
        </button>
      ))}
    </div>
  )
}

function AddMemory({ kind, onAdd }: { kind: MemoryKind; onAdd: (text: string, pinned: boolean) => Promise<void> }) {
  const { t } = useI18n()
  const [pinned, setPinned] = useState(false)
  return (
    <MemoryEditor
      label={t('memory.new')}
      placeholder={t(KIND_TEXT[kind].placeholder)}
      submitLabel={t('memory.add')}
      onSubmit={async (text) => {
        await onAdd(text, pinned)
        setPinned(false)
      }}
      clearOnSave
      testid="memory-add"
    >
      <label className="check small" title={t('memory.pinHint')}>
        <input type="checkbox" checked={pinned} onChange={(e) => setPinned(e.target.checked)} data-testid="memory-add-pin" />
        {t('memory.pinNew')}
      </label>
    </MemoryEditor>
  )
}

/** Hands `text` to the browser as a downloaded file. */
function saveFile(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = name
  a.click()
  // The download has started from the URL; let go of it after this task.
  setTimeout(() => URL.revokeObjectURL(url))
}
