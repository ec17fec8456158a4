// The admin's agent form, as pure functions: an agent to the form's fields and
// back to `PUT /v1/admin/agents/{id}`. A PUT replaces the agent, so what the form
// does not edit (tool policies, skills) is carried over from the agent as it was;
// an agent saved before it had knowledge bases gets none, searched as a `tool`, one
// read without `memory` remembers people (the server's default), and one read
// without `delegates` delegates to no one.
// Only admins get an agent's instructions, policies and access lists.

import type { Agent, KnowledgeMode, PutAgentRequest } from './types'

/** The server's rule for an agent id. */
export const AGENT_ID = /^[a-z0-9_-]{1,32}$/
/** The longest instructions (an agent's or a user's) the server accepts. */
export const MAX_INSTRUCTIONS = 32_000
/** The built-in fallback agent: it cannot be deleted. */
export const BUILTIN_AGENT = 'agent'

export interface AgentForm {
  id: string
  name: string
  description: string
  /** '' = the default model */
  model: string
  instructions: string
  allTools: boolean
  /** comma-separated, when not all tools */
  tools: string
  /** '' = the server's limit */
  maxSteps: string
  default: boolean
  /** comma-separated usernames; with `allowedRoles` both empty: everyone */
  allowedUsers: string
  /** comma-separated roles (admin, user) */
  allowedRoles: string
  /** the knowledge bases it searches, by name */
  knowledge: string[]
  knowledgeMode: KnowledgeMode
  /** it remembers the people it talks to (off: recalls nothing, no memory tools, not learned from) */
  memory: boolean
  /** the agents (ids) it may hand tasks to with `delegate`, in the order chosen */
  delegates: string[]
}

export function emptyForm(): AgentForm {
  return {
    id: '',
    name: '',
    description: '',
    model: '',
    instructions: '',
    allTools: true,
    tools: '',
    maxSteps: '',
    default: false,
    allowedUsers: '',
    allowedRoles: '',
    knowledge: [],
    knowledgeMode: 'tool',
    memory: true,
    delegates: [],
  }
}

export function formFromAgent(a: Agent): AgentForm {
  return {
    id: a.id,
    name: a.name,
    description: a.description,
    model: a.model ?? '',
    instructions: a.instructions ?? '',
    allTools: a.tools === null || a.tools === undefined,
    tools: (a.tools ?? []).join(', '),
    maxSteps: a.max_steps ? String(a.max_steps) : '',
    default: a.default,
    allowedUsers: (a.allowed_users ?? []).join(', '),
    allowedRoles: (a.allowed_roles ?? []).join(', '),
    knowledge: [...(a.knowledge ?? [])],
    knowledgeMode: a.knowledge_mode ?? 'tool',
    memory: a.memory ?? true,
    delegates: [...(a.delegates ?? [])],
  }
}

/** Adds or removes one base name, keeping the order they were chosen in. */
export function toggleName(names: readonly string[], name: string, on: boolean): string[] {
  const rest = names.filter((n) => n !== name)
  return on ? [...rest, name] : rest
}

export interface DelegateChoice {
  id: string
  /** the agent's name; its id when it is not (or no longer) listed */
  name: string
  /** chosen before, but no agent has this id now (a call naming it is refused) */
  missing: boolean
}

/**
 * The agents the form offers as delegates: every other agent, then any chosen id
 * that is not one of them — the agent itself, or an agent gone since (marked) — so
 * a save never drops a choice unseen.
 */
export function delegateChoices(agents: readonly Agent[], self: string, chosen: readonly string[]): DelegateChoice[] {
  const choice = (id: string): DelegateChoice => {
    const a = agents.find((x) => x.id === id)
    return { id, name: a?.name || id, missing: !a }
  }
  const others = agents.filter((a) => a.id !== self).map((a) => choice(a.id))
  const rest = chosen.filter((id) => !others.some((o) => o.id === id)).map(choice)
  return [...others, ...new Map(rest.map((c) => [c.id, c])).values()]
}

/** `"web_fetch, mcp:docs ,,"` → `["web_fetch", "mcp:docs"]`, without repeats. */
export function parseToolList(s: string): string[] {
  return [...new Set(s.split(/[,\n]/).map((x) => x.trim()).filter(Boolean))]
}

export type FormProblem = 'id' | 'name' | 'instructions' | 'maxSteps' | 'roles'

/** What is wrong with the form before it is sent (the server checks again). */
export function formProblem(f: AgentForm): FormProblem | null {
  if (!AGENT_ID.test(f.id)) return 'id'
  if (!f.name.trim() || f.name.trim().length > 100) return 'name'
  if ([...f.instructions].length > MAX_INSTRUCTIONS) return 'instructions'
  if (f.maxSteps.trim() && !/^[1-9]\d{0,5}$/.test(f.maxSteps.trim())) return 'maxSteps'
  if (parseToolList(f.allowedRoles).some((r) => r !== 'admin' && r !== 'user')) return 'roles'
  return null
}

export function toPutRequest(f: AgentForm, existing?: Agent): PutAgentRequest {
  return {
    name: f.name.trim(),
    description: f.description.trim(),
    model: f.model || null,
    instructions: f.instructions,
    tools: f.allTools ? null : parseToolList(f.tools),
    tool_policies: existing?.tool_policies ?? {},
    skills: existing?.skills ?? null,
    max_steps: f.maxSteps.trim() ? Number(f.maxSteps.trim()) : null,
    default: f.default,
    allowed_users: parseToolList(f.allowedUsers),
    allowed_roles: parseToolList(f.allowedRoles),
    knowledge: [...new Set(f.knowledge)],
    knowledge_mode: f.knowledgeMode,
    // Always sent: the server's default is on, so leaving it out would turn it back on.
    memory: f.memory,
    delegates: [...new Set(f.delegates)],
  }
}
