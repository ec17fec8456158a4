// The chat's model and agent pickers. The model is sent with each message; the
// agent belongs to the session: switching it PATCHes the session (a new chat
// creates its session with it), and the session's agent, read on every poll, wins
// over the picker (another tab or client may have switched it).

import { useEffect, useState } from 'react'
import { api } from '../api'
import { loadModels } from '../catalogue'
import type { Agent, Model, Session } from '../types'
import { errText } from './useTurns'

export interface Choices {
  models: Model[]
  agents: Agent[]
  model: string
  agent: string
  setModel: (id: string) => void
  chooseAgent: (id: string) => void
  /** an agent's display name (its id when unknown) */
  agentName: (id: string | undefined) => string | undefined
}

export function useChoices(
  sessionId: string | undefined,
  session: Session | null,
  onSession: (s: Session) => void,
  onError: (message: string) => void,
): Choices {
  const [models, setModels] = useState<Model[]>([])
  const [agents, setAgents] = useState<Agent[]>([])
  const [model, setModel] = useState('')
  const [agent, setAgent] = useState('')

  // Agents are read per chat, not cached: an admin may have changed them.
  useEffect(() => {
    let live = true
    loadModels()
      .then((m) => live && setModels(m))
      .catch(() => {})
    api
      .agents()
      .then((a) => live && setAgents(a))
      .catch(() => {})
    return () => {
      live = false
    }
  }, [])

  // The session's model, else the default.
  useEffect(() => {
    if (!model && models.length) {
      const m = (session?.model && models.find((x) => x.id === session.model)) || models.find((x) => x.default) || models[0]
      setModel(m.id)
    }
  }, [models, session, model])

  const sessionAgent = session?.agent
  useEffect(() => {
    if (sessionAgent) setAgent(sessionAgent)
  }, [sessionAgent])
  useEffect(() => {
    if (!agent && !sessionId && agents.length) setAgent((agents.find((a) => a.default) ?? agents[0]).id)
  }, [agent, agents, sessionId])

  function chooseAgent(id: string) {
    setAgent(id)
    const a = agents.find((x) => x.id === id)
    // An agent may name the model it is meant for.
    if (a?.model && models.some((m) => m.id === a.model)) setModel(a.model)
    if (!sessionId) return
    api
      .updateSession(sessionId, { agent: id })
      .then(onSession)
      .catch((e) => {
        onError(errText(e))
        if (sessionAgent) setAgent(sessionAgent)
      })
  }

  return {
    models,
    agents,
    model,
    agent,
    setModel,
    chooseAgent,
    agentName: (id) => (id ? agents.find((a) => a.id === id)?.name || id : undefined),
  }
}
