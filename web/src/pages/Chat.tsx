// /chat (a new conversation) and /chat/:id.
//
// Loading order matters for "never vanish, never duplicate": the session is read
// first, then its messages. If the session has an active run, that run is rendered
// from its event stream (replayed from the first event) and its checkpointed
// messages are left out of the history; otherwise the messages, read after, are
// complete. While idle the page polls the session so a reply started elsewhere (a
// second tab, the CLI, a queued follow-up) shows up live here too.
//
// Turn actions (undo, redo, regenerate, edit, choosing an alternative) change which
// messages are shown, so after each the page reads the newest page of messages
// again and replaces what it had (`reload`); a poll that started before is
// discarded (`gen`), so an undone turn cannot come back through a late merge. A
// regenerate or edit starts a run, streamed like any reply.
//
// Files (`useDrafts`) go with a send as multipart; the message shows this tab's
// thumbnails until the server's list of its files is read, right after the send.
// Files dropped anywhere on the chat are attached (`useFileDrop`).

import { Fragment, useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { useLocation, useNavigate, useParams } from 'react-router'
import { ApiError, api } from '../api'
import { shownFromDraft } from '../attachments'
import { DropZone } from '../components/Attachments'
import { ChatTools, SummaryNote, SystemPromptPanel, TurnBar } from '../components/ChatTools'
import { SessionKnowledgePanel } from '../components/SessionKnowledge'
import { Composer, type SendOptions } from '../components/Composer'
import { HistoricReply, LiveReply } from '../components/Reply'
import { TodoPanel } from '../components/TodoPanel'
import { UserMessage, type Pending } from '../components/UserMessage'
import { sessionsChanged } from '../events'
import { titleFrom } from '../format'
import { useT } from '../i18n'
import type { Phase } from '../stream/reducer'
import { rememberRunAgent, runAgentOf } from '../runAgents'
import { adoptAttachments, buildTimeline, mergeMessages } from '../timeline'
import { lastTurn } from '../turns'
import type { Message, Session } from '../types'
import { useChoices } from './useChoices'
import { useDrafts, useObjectUrls, useSentFiles } from './useDrafts'
import { useFileDrop } from './useFileDrop'
import { useSessionTodos } from './useSessionTodos'
import { useStickyScroll } from './useStickyScroll'
import { errText, useTurns } from './useTurns'

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
  const [promptOpen, setPromptOpen] = useState(false)
  const [knowledgeOpen, setKnowledgeOpen] = useState(false)
  /** bumped by every reload; a poll that began under an older value is dropped */
  const gen = useRef(0)
  const drafts = useDrafts()
  const drop = useFileDrop(drafts.add)
  const sent = useSentFiles(messages)
  useObjectUrls(
    [...drafts.items, ...pending.flatMap((p) => p.files), ...Object.values(sent.byMessage).flat()].map((d) => d.url),
  )

  // The run id handed over by /chat is needed once; a later reload reads the session.
  useEffect(() => {
    if (startRun) nav(loc.pathname, { replace: true, state: null })
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [])

  // The todo list: read as the conversation changes, replaced by live events.
  const { todos, onLive: onLiveTodos } = useSessionTodos(sessionId, messages)

  const liveRef = useRef(liveRuns)
  liveRef.current = liveRuns
  const pendingRef = useRef(pending)
  pendingRef.current = pending

  const activeRun = liveRuns.find((r) => !TERMINAL.includes(phases[r] ?? 'connecting'))
  const running = !!activeRun

  // ---- loading ---------------------------------------------------------------

  const choices = useChoices(sessionId, session, setSession, setSendError)
  const { model, agent, agentName } = choices

  /** Reads the session, then the newest page of messages; attaches to its active run. */
  const refresh = useCallback(
    async (reloadMessages: boolean) => {
      if (!sessionId) return
      const g = gen.current
      const s = await api.getSession(sessionId)
      if (g !== gen.current) return
      setSession(s)
      const active = s.active_run_id
      const isNew = !!active && !liveRef.current.includes(active)
      // A queued message of ours may already have had its whole follow-up run (a
      // fast reply ends between two polls): the messages tell.
      const queued = pendingRef.current.some((p) => p.status === 'queued')
      if (!reloadMessages && !isNew && !queued) return
      const page = await api.listMessages(sessionId, { limit: PAGE })
      if (g !== gen.current) return
      setMessages((cur) => (cur.length ? mergeMessages(cur, page.messages) : page.messages))
      if (active && isNew) {
        rememberRunAgent(active, s.agent)
        setLiveRuns((cur) => (cur.includes(active) ? cur : [...cur, active]))
      }
      const ids = new Set(page.messages.map((m) => m.id))
      setPending((cur) => cur.filter((p) => !(p.messageId && ids.has(p.messageId))))
    },
    [sessionId],
  )

  /**
   * After a turn action: the session and the newest page of messages, replacing
   * what was shown; live runs are only the active one (and `started`, a run the
   * action began, even if it already ended).
   */
  const reload = useCallback(
    async (started?: string) => {
      if (!sessionId) return
      const g = ++gen.current
      const s = await api.getSession(sessionId)
      const page = await api.listMessages(sessionId, { limit: PAGE })
      if (g !== gen.current) return
      setSession(s)
      setMessages(page.messages)
      setCursor(page.next_cursor ?? null)
      const live = [...new Set([started, s.active_run_id].filter((r): r is string => !!r))]
      setLiveRuns(live)
      sessionsChanged()
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
          rememberRunAgent(a, s.agent)
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

  /** The server's list of a sent message's files (with their ids), for its thumbnails. */
  async function describeSent(sid: string) {
    const g = gen.current
    const page = await api.listMessages(sid, { limit: PAGE })
    if (g === gen.current) setMessages((cur) => adoptAttachments(cur, page.messages))
  }

  async function send(text: string, { multitask, plan }: SendOptions): Promise<boolean> {
    const key = newKey()
    const files = drafts.take()
    setPending((p) => [...p, { key, text, status: 'sending', files }])
    const patchPending = (patch: Partial<Pending>) =>
      setPending((p) => p.map((x) => (x.key === key ? { ...x, ...patch } : x)))
    let created: string | undefined
    try {
      let sid = sessionId
      if (!sid) {
        const title = titleFrom(text || files.map((f) => f.name).join(', '))
        const s = await api.createSession({ title, model: model || undefined, agent: agent || undefined })
        sid = created = s.id
      }
      const r = await api.sendMessage(
        sid,
        { text, model: model || undefined, agent: agent || undefined, multitask, plan: plan || undefined },
        key,
        files,
      )
      if (r.run_id) rememberRunAgent(r.run_id, agent)
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
        sent.keep(r.message_id, files)
        if (files.length) describeSent(sid).catch(() => {})
      } else {
        patchPending({ status: 'queued', messageId: r.message_id })
      }
      return true
    } catch (e) {
      // In one update with the pending message's removal: the thumbnails live on.
      drafts.restore(files)
      setPending((p) => p.filter((x) => x.key !== key))
      setSendError(errText(e))
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

  const { scroller, content } = useStickyScroll()

  // ---- rendering ---------------------------------------------------------------

  useEffect(() => {
    const title = sessionId ? session?.title || t('chat.untitled') : t('nav.newChat')
    document.title = `${title} · Weft`
    return () => {
      document.title = 'Weft'
    }
  }, [sessionId, session?.title, t])

  const timeline = useMemo(() => buildTimeline(messages, liveRuns), [messages, liveRuns])
  const turn = useMemo(() => lastTurn(timeline), [timeline])
  const turns = useTurns({
    sessionId,
    running,
    loaded,
    messages,
    turnRun: turn?.runId ?? null,
    reload,
    onStarted: (runId) => rememberRunAgent(runId, agent),
  })
  const busy = running || turns.busy || pending.length > 0

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
    <div className="chat" {...drop.handlers} data-testid="chat">
      {drop.over && <DropZone />}
      <div className="chat-head">
        <h1 className="chat-title" title={session?.title ?? ''}>
          {sessionId ? session?.title || t('chat.untitled') : t('nav.newChat')}
        </h1>
        {sessionId && (
          <ChatTools
            busy={busy || !loaded}
            canUndo={!!turn}
            canCompact={loaded && timeline.length > 0}
            promptOpen={promptOpen}
            onUndo={turns.undo}
            onRedo={turns.redo}
            onCompact={turns.compact}
            onTogglePrompt={() => setPromptOpen((o) => !o)}
            knowledgeCount={session?.knowledge?.length ?? 0}
            knowledgeOpen={knowledgeOpen}
            onToggleKnowledge={() => setKnowledgeOpen((o) => !o)}
          />
        )}
      </div>
      {promptOpen && sessionId && (
        <SystemPromptPanel sessionId={sessionId} agent={session?.agent ?? agent} onClose={() => setPromptOpen(false)} />
      )}
      {knowledgeOpen && session && (
        <SessionKnowledgePanel session={session} onSaved={setSession} onClose={() => setKnowledgeOpen(false)} />
      )}
      <div className="chat-scroll" ref={scroller}>
        <div className="chat-log" ref={content} aria-live="polite" aria-relevant="additions">
          {turns.summary && <SummaryNote summary={turns.summary} />}
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
          {timeline.map((it, i) => {
            if (it.kind === 'user') {
              const editable = i === turn?.user && !pending.length
              return (
                <UserMessage
                  key={it.key}
                  text={it.message.content}
                  author={it.message.author_name}
                  files={sent.shown(it.message)}
                  onEdit={editable ? turns.edit : undefined}
                  editDisabled={busy}
                />
              )
            }
            // One element per item, whether or not the bar follows, so the reply is never remounted.
            const last = i === turn?.reply && !running && !pending.length
            return (
              <Fragment key={it.key}>
                {it.kind === 'live' ? (
                  <LiveReply
                    runId={it.runId}
                    sessionId={sessionId}
                    agent={agentName(runAgentOf(it.runId))}
                    nameOf={agentName}
                    onPhase={onPhase}
                    onGone={onGone}
                    onTodos={onLiveTodos}
                  />
                ) : (
                  <HistoricReply
                    runId={it.runId}
                    messages={it.messages}
                    agent={agentName(runAgentOf(it.runId))}
                    nameOf={agentName}
                    onActive={onActive}
                  />
                )}
                {last && (
                  <TurnBar nav={turns.nav} busy={busy} onRegenerate={turns.regenerate} onChoose={turns.choose} />
                )}
              </Fragment>
            )
          })}
          {pending.map((p) => (
            <UserMessage key={p.key} text={p.text} files={p.files.map(shownFromDraft)} status={p.status} />
          ))}
        </div>
      </div>
      {turns.compactAsked && (
        <p className="notice compact-note" role="status" data-testid="compact-asked">
          {t('chat.compactAsked')}
        </p>
      )}
      {turns.error && (
        <div className="notice error send-error" role="alert" data-testid="turn-error">
          {turns.error.refused
            ? t('chat.refused', { message: turns.error.message })
            : t('common.error', { message: turns.error.message })}
          <button className="btn ghost small" onClick={turns.clearError}>
            {t('common.close')}
          </button>
        </div>
      )}
      {sendError && (
        <div className="notice error send-error" role="alert" data-testid="send-error">
          {t('common.error', { message: sendError })}
          <button className="btn ghost small" onClick={() => setSendError(null)}>
            {t('common.close')}
          </button>
        </div>
      )}
      <TodoPanel items={todos} />
      <Composer
        models={choices.models}
        agents={choices.agents}
        model={model}
        agent={agent}
        onModel={choices.setModel}
        onAgent={choices.chooseAgent}
        running={running}
        stopping={!!activeRun && stopping === activeRun}
        drafts={drafts}
        onSend={send}
        onStop={stop}
      />
    </div>
  )
}
