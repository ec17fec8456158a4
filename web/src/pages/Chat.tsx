// /chat (a new conversation) and /chat/:id.
//
// Loading order matters for "never vanish, never duplicate": the session is read
// first, then its messages. If the session has an active run, that run is rendered
// from its event stream (replayed from the first event) and its checkpointed
// messages are left out of the history; otherwise the messages, read after, are
// complete. While idle the page polls the session so a reply started elsewhere (a
// second tab, the CLI, a queued follow-up) shows up live here too.

import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react'
import { useLocation, useNavigate, useParams } from 'react-router'
import { ApiError, api } from '../api'
import { Composer } from '../components/Composer'
import { HistoricReply, LiveReply } from '../components/Reply'
import { UserMessage, type Pending } from '../components/UserMessage'
import { loadCatalogue } from '../catalogue'
import { sessionsChanged } from '../events'
import { titleFrom } from '../format'
import { useT } from '../i18n'
import type { Phase } from '../stream/reducer'
import { buildTimeline, mergeMessages } from '../timeline'
import type { Message, Mode, Model, Multitask, Session } from '../types'

const PAGE = 50
const IDLE_POLL_MS = 4000
const TERMINAL: Phase[] = ['done', 'error', 'cancelled']


function newKey(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`
}

export function ChatPage() {
  const { id } = useParams()
  return <ChatView key={id ?? 'new'} sessionId={id} />
}

function ChatView({ sessionId }: { sessionId?: string }) {
  const t = useT()
  const nav = useNavigate()
  const loc = useLocation()
  const startRun = (loc.state as { runId?: string } | null)?.runId

  const [session, setSession] = useState<Session | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  const [notFound, setNotFound] = useState(false)
  const [loaded, setLoaded] = useState(!sessionId)
  const [messages, setMessages] = useState<Message[]>([])
  const [cursor, setCursor] = useState<string | null>(null)
  const [loadingOlder, setLoadingOlder] = useState(false)
  const [liveRuns, setLiveRuns] = useState<string[]>(startRun ? [startRun] : [])
  const [phases, setPhases] = useState<Record<string, Phase>>({})
  const [pending, setPending] = useState<Pending[]>([])
  const [sendError, setSendError] = useState<string | null>(null)
  const [stopping, setStopping] = useState<string | null>(null)
  const [models, setModels] = useState<Model[]>([])
  const [modes, setModes] = useState<Mode[]>([])
  const [model, setModel] = useState('')
  const [mode, setMode] = useState('')

  // The run id handed over by /chat is needed once; a later reload reads the session.
  useEffect(() => {
    if (startRun) nav(loc.pathname, { replace: true, state: null })
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [])

  const liveRef = useRef(liveRuns)
  liveRef.current = liveRuns
  const pendingRef = useRef(pending)
  pendingRef.current = pending

  const activeRun = liveRuns.find((r) => !TERMINAL.includes(phases[r] ?? 'connecting'))
  const running = !!activeRun

  // ---- loading ---------------------------------------------------------------

  useEffect(() => {
    let live = true
    loadCatalogue()
      .then((c) => {
        if (!live) return
        setModels(c.models)
        setModes(c.modes)
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [])

  // Pick the session's model/mode, else the defaults.
  useEffect(() => {
    if (!model && models.length) {
      const m = (session?.model && models.find((x) => x.id === session.model)) || models.find((x) => x.default) || models[0]
      setModel(m.id)
    }
    if (!mode && modes.length) {
      const m = (session?.mode && modes.find((x) => x.id === session.mode)) || modes.find((x) => x.default) || modes[0]
      setMode(m.id)
    }
  }, [models, modes, session, model, mode])

  /** Reads the session, then the newest page of messages; attaches to its active run. */
  const refresh = useCallback(
    async (reloadMessages: boolean) => {
      if (!sessionId) return
      const s = await api.getSession(sessionId)
      setSession(s)
      const active = s.active_run_id
      const isNew = !!active && !liveRef.current.includes(active)
      // A queued message of ours may already have had its whole follow-up run (a
      // fast reply ends between two polls): the messages tell.
      const queued = pendingRef.current.some((p) => p.status === 'queued')
      if (!reloadMessages && !isNew && !queued) return
      const page = await api.listMessages(sessionId, { limit: PAGE })
      setMessages((cur) => (cur.length ? mergeMessages(cur, page.messages) : page.messages))
      if (active && isNew) setLiveRuns((cur) => (cur.includes(active) ? cur : [...cur, active]))
      const ids = new Set(page.messages.map((m) => m.id))
      setPending((cur) => cur.filter((p) => !(p.messageId && ids.has(p.messageId))))
    },
    [sessionId],
  )

  useEffect(() => {
    if (!sessionId) return
    let live = true
    ;(async () => {
      try {
        const s = await api.getSession(sessionId)
        if (!live) return
        setSession(s)
        const page = await api.listMessages(sessionId, { limit: PAGE })
        if (!live) return
        setMessages(page.messages)
        setCursor(page.next_cursor ?? null)
        if (s.active_run_id) {
          const a = s.active_run_id
          setLiveRuns((cur) => (cur.includes(a) ? cur : [...cur, a]))
        }
        setLoaded(true)
      } catch (e) {
        if (!live) return
        if (e instanceof ApiError && e.status === 404) setNotFound(true)
        else setLoadError(e instanceof Error ? e.message : String(e))
        setLoaded(true)
      }
    })()
    return () => {
      live = false
    }
  }, [sessionId])

  // While nothing runs here, look for a run started elsewhere (quickly when our
  // own queued message is about to become the follow-up run).
  const waitingQueued = pending.some((p) => p.status === 'queued')
  useEffect(() => {
    if (!sessionId || running || !loaded || notFound) return
    const timer = setInterval(
      () => {
        if (document.visibilityState === 'visible') refresh(false).catch(() => {})
      },
      waitingQueued ? 1000 : IDLE_POLL_MS,
    )
    return () => clearInterval(timer)
  }, [sessionId, running, loaded, notFound, refresh, waitingQueued])

  const onPhase = useCallback(
    (runId: string, phase: Phase) => {
      setPhases((p) => ({ ...p, [runId]: phase }))
      if (TERMINAL.includes(phase)) {
        setStopping((s) => (s === runId ? null : s))
        // A queued follow-up may start now; the title may have changed.
        refresh(false).catch(() => {})
        sessionsChanged()
      }
    },
    [refresh],
  )

  const onGone = useCallback(
    (runId: string) => {
      setLiveRuns((cur) => cur.filter((r) => r !== runId))
      refresh(true).catch(() => {})
    },
    [refresh],
  )

  const onActive = useCallback((runId: string) => {
    setLiveRuns((cur) => (cur.includes(runId) ? cur : [...cur, runId]))
  }, [])

  async function loadOlder() {
    if (!sessionId || !cursor) return
    setLoadingOlder(true)
    try {
      const page = await api.listMessages(sessionId, { limit: PAGE, cursor })
      setMessages((cur) => {
        const ids = new Set(cur.map((m) => m.id))
        return [...page.messages.filter((m) => !ids.has(m.id)), ...cur]
      })
      setCursor(page.next_cursor ?? null)
    } finally {
      setLoadingOlder(false)
    }
  }

  // ---- sending ---------------------------------------------------------------

  async function send(text: string, multitask?: Multitask): Promise<boolean> {
    const key = newKey()
    setPending((p) => [...p, { key, text, status: 'sending' }])
    const patchPending = (patch: Partial<Pending>) =>
      setPending((p) => p.map((x) => (x.key === key ? { ...x, ...patch } : x)))
    let created: string | undefined
    try {
      let sid = sessionId
      if (!sid) {
        const s = await api.createSession({ title: titleFrom(text), model: model || undefined, mode: mode || undefined })
        sid = created = s.id
      }
      const r = await api.sendMessage(
        sid,
        { text, model: model || undefined, mode: mode || undefined, multitask },
        key,
      )
      sessionsChanged()
      if (!sessionId) {
        nav(`/chat/${sid}`, { state: r.run_id ? { runId: r.run_id } : null })
        return true
      }
      if (r.run_id) {
        const runId = r.run_id
        setPending((p) => p.filter((x) => x.key !== key))
        setMessages((cur) =>
          mergeMessages(cur, [
            {
              id: r.message_id,
              session_id: sid,
              role: 'user',
              content: text,
              run_id: runId,
              created_at: new Date().toISOString(),
            },
          ]),
        )
        setLiveRuns((cur) => (cur.includes(runId) ? cur : [...cur, runId]))
      } else {
        patchPending({ status: 'queued', messageId: r.message_id })
      }
      return true
    } catch (e) {
      const msg =
        e instanceof ApiError && e.status === 429 && e.retryAfter
          ? `${e.message} (${e.retryAfter}s)`
          : e instanceof Error
            ? e.message
            : String(e)
      setPending((p) => p.filter((x) => x.key !== key))
      setSendError(msg)
      // Do not leave an empty conversation behind a first message that failed.
      if (created) api.deleteSession(created).catch(() => {})
      return false
    }
  }
  async function stop() {
    if (!activeRun) return
    setStopping(activeRun)
    try {
      await api.cancelRun(activeRun)
    } catch (e) {
      setStopping(null)
      setSendError(e instanceof Error ? e.message : String(e))
    }
  }

  // ---- scrolling ---------------------------------------------------------------

  const scroller = useRef<HTMLDivElement>(null)
  const content = useRef<HTMLDivElement>(null)
  const stuck = useRef(true)
  useLayoutEffect(() => {
    const el = scroller.current
    const inner = content.current
    if (!el || !inner) return
    const onScroll = () => {
      stuck.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80
    }
    const ro = new ResizeObserver(() => {
      if (stuck.current) el.scrollTop = el.scrollHeight
    })
    el.addEventListener('scroll', onScroll, { passive: true })
    ro.observe(inner)
    return () => {
      el.removeEventListener('scroll', onScroll)
      ro.disconnect()
    }
  }, [])

  // ---- rendering ---------------------------------------------------------------

  useEffect(() => {
    const title = sessionId ? session?.title || t('chat.untitled') : t('nav.newChat')
    document.title = `${title} · Weft`
    return () => {
      document.title = 'Weft'
    }
  }, [sessionId, session?.title, t])

  const timeline = useMemo(() => buildTimeline(messages, liveRuns), [messages, liveRuns])

  if (notFound) {
    return (
      <div className="page">
        <p className="notice error" role="alert">
          {t('chat.notFound')}
        </p>
      </div>
    )
  }

  const empty = loaded && !timeline.length && !pending.length
  return (
    <div className="chat">
      <div className="chat-head">
        <h1 className="chat-title" title={session?.title ?? ''}>
          {sessionId ? session?.title || t('chat.untitled') : t('nav.newChat')}
        </h1>
      </div>
      <div className="chat-scroll" ref={scroller}>
        <div className="chat-log" ref={content} aria-live="polite" aria-relevant="additions">
          {cursor && (
            <button className="btn ghost load-older" onClick={loadOlder} disabled={loadingOlder}>
              {loadingOlder ? t('chat.loading') : t('chat.loadEarlier')}
            </button>
          )}
          {!loaded && <p className="muted">{t('chat.loading')}</p>}
          {loadError && (
            <p className="notice error" role="alert">
              {t('common.error', { message: loadError })}
            </p>
          )}
          {empty && (
            <div className="empty">
              <h2>{t('chat.empty')}</h2>
              <p className="muted">{t('chat.emptyHint')}</p>
            </div>
          )}
          {timeline.map((it) => {
            if (it.kind === 'user') return <UserMessage key={it.key} text={it.message.content} />
            if (it.kind === 'live')
              return (
                <LiveReply key={it.key} runId={it.runId} sessionId={sessionId} onPhase={onPhase} onGone={onGone} />
              )
            return <HistoricReply key={it.key} runId={it.runId} messages={it.messages} onActive={onActive} />
          })}
          {pending.map((p) => (
            <UserMessage key={p.key} text={p.text} status={p.status} />
          ))}
        </div>
      </div>
      {sendError && (
        <div className="notice error send-error" role="alert" data-testid="send-error">
          {t('common.error', { message: sendError })}
          <button className="btn ghost small" onClick={() => setSendError(null)}>
            {t('common.close')}
          </button>
        </div>
      )}
      <Composer
        models={models}
        modes={modes}
        model={model}
        mode={mode}
        onModel={setModel}
        onMode={setMode}
        running={running}
        stopping={!!activeRun && stopping === activeRun}
        onSend={send}
        onStop={stop}
      />
    </div>
  )
}
