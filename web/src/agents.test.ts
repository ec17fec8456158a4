import { describe, expect, it } from 'vitest'
import {
  delegateChoices,
  emptyForm,
  formFromAgent,
  formProblem,
  parseToolList,
  toPutRequest,
  toggleName,
} from './agents'
import type { Agent } from './types'

const pirate: Agent = {
  id: 'pirate',
  name: 'Pirate',
  description: 'Talks like one',
  model: 'mock',
  instructions: 'Arr.',
  tools: ['current_time', 'mcp:docs'],
  tool_policies: { web_fetch: 'confirm' },
  skills: ['maps'],
  max_steps: 4,
  default: false,
  origin: 'admin',
  allowed_users: ['alice'],
  allowed_roles: ['admin'],
}

describe('agent form', () => {
  it('reads a comma list of tools, trimmed and without repeats', () => {
    expect(parseToolList(' web_fetch, mcp:docs ,,web_fetch\nmcp:x__y ')).toEqual(['web_fetch', 'mcp:docs', 'mcp:x__y'])
    expect(parseToolList(' , ')).toEqual([])
  })

  it('round-trips an agent, keeping what the form does not edit', () => {
    const f = formFromAgent(pirate)
    expect(f).toMatchObject({ allTools: false, tools: 'current_time, mcp:docs', maxSteps: '4', model: 'mock' })
    expect(toPutRequest(f, pirate)).toEqual({
      name: 'Pirate',
      description: 'Talks like one',
      model: 'mock',
      instructions: 'Arr.',
      tools: ['current_time', 'mcp:docs'],
      tool_policies: { web_fetch: 'confirm' },
      skills: ['maps'],
      max_steps: 4,
      default: false,
      allowed_users: ['alice'],
      allowed_roles: ['admin'],
      knowledge: [],
      knowledge_mode: 'tool',
      memory: true,
      delegates: [],
    })
  })

  it('keeps an agent that remembers no one so after an edit; one without the field remembers', () => {
    const forgetful: Agent = { ...pirate, memory: false }
    const f = formFromAgent(forgetful)
    expect(f.memory).toBe(false)
    const edited = { ...f, description: 'Forgets everyone' }
    expect(toPutRequest(edited, forgetful)).toMatchObject({ description: 'Forgets everyone', memory: false })
    // Sent even when on, so the request says what the form shows.
    expect(toPutRequest({ ...f, memory: true }, forgetful).memory).toBe(true)
    expect(formFromAgent({ ...pirate, memory: undefined }).memory).toBe(true)
    expect(emptyForm().memory).toBe(true)
    expect(toPutRequest({ ...emptyForm(), id: 'new', name: 'New' }).memory).toBe(true)
  })

  it('keeps the knowledge bases and their mode on a save; an agent without them gets none, as a tool', () => {
    const helpdesk: Agent = { ...pirate, knowledge: ['handbook', 'Policies 2026'], knowledge_mode: 'auto' }
    const f = formFromAgent(helpdesk)
    expect(f).toMatchObject({ knowledge: ['handbook', 'Policies 2026'], knowledgeMode: 'auto' })
    expect(toPutRequest(f, helpdesk)).toMatchObject({ knowledge: ['handbook', 'Policies 2026'], knowledge_mode: 'auto' })
    const old: Agent = { ...pirate, knowledge: undefined, knowledge_mode: undefined }
    expect(toPutRequest(formFromAgent(old), old)).toMatchObject({ knowledge: [], knowledge_mode: 'tool' })
    expect(toPutRequest(emptyForm())).toMatchObject({ knowledge: [], knowledge_mode: 'tool' })
  })

  it('keeps the agents it may delegate to on a save; an agent without them delegates to no one', () => {
    const lead: Agent = { ...pirate, id: 'lead', delegates: ['researcher', 'writer'] }
    const f = formFromAgent(lead)
    expect(f.delegates).toEqual(['researcher', 'writer'])
    expect(toPutRequest(f, lead).delegates).toEqual(['researcher', 'writer'])
    // Unticked and ticked again, one goes last; a repeat is sent once.
    const edited = { ...f, delegates: [...toggleName(toggleName(f.delegates, 'researcher', false), 'researcher', true), 'writer'] }
    expect(edited.delegates).toEqual(['writer', 'researcher', 'writer'])
    expect(toPutRequest(edited, lead).delegates).toEqual(['writer', 'researcher'])
    expect(toPutRequest(formFromAgent({ ...pirate, delegates: undefined })).delegates).toEqual([])
    expect(emptyForm().delegates).toEqual([])
    // The form's list is its own: editing it leaves the agent as it was read.
    f.delegates.push('x')
    expect(lead.delegates).toEqual(['researcher', 'writer'])
  })

  it('offers every other agent as a delegate, and keeps a chosen one that is gone, marked', () => {
    const agents: Agent[] = [
      { ...pirate, id: 'lead', name: 'Lead' },
      { ...pirate, id: 'researcher', name: 'Researcher' },
      { ...pirate, id: 'writer', name: '' },
    ]
    expect(delegateChoices(agents, 'lead', [])).toEqual([
      { id: 'researcher', name: 'Researcher', missing: false },
      { id: 'writer', name: 'writer', missing: false },
    ])
    // Chosen before: an agent deleted since, and (from a config file) the agent itself.
    expect(delegateChoices(agents, 'lead', ['old', 'researcher', 'lead', 'old']).slice(2)).toEqual([
      { id: 'old', name: 'old', missing: true },
      { id: 'lead', name: 'Lead', missing: false },
    ])
    // A new agent (no id yet) may delegate to any agent there is.
    expect(delegateChoices(agents, '', []).map((c) => c.id)).toEqual(['lead', 'researcher', 'writer'])
    expect(delegateChoices([], 'lead', [])).toEqual([])
  })

  it('toggles a base on and off without repeats', () => {
    expect(toggleName(['a'], 'b', true)).toEqual(['a', 'b'])
    expect(toggleName(['a', 'b'], 'a', true)).toEqual(['b', 'a'])
    expect(toggleName(['a', 'b'], 'a', false)).toEqual(['b'])
    expect(toggleName([], 'a', false)).toEqual([])
  })

  it('an agent as a non-admin sees it (no instructions) still makes a form', () => {
    const seen: Agent = { ...pirate, instructions: undefined, tool_policies: undefined, allowed_users: undefined, allowed_roles: undefined }
    expect(formFromAgent(seen)).toMatchObject({ instructions: '', allowedUsers: '', allowedRoles: '' })
  })

  it('"all tools" sends no list at all; no tools is an empty list', () => {
    const all = { ...formFromAgent(pirate), allTools: true }
    expect(toPutRequest(all, pirate).tools).toBeNull()
    const none = { ...formFromAgent(pirate), tools: '' }
    expect(toPutRequest(none, pirate).tools).toEqual([])
    expect(formFromAgent({ ...pirate, tools: null }).allTools).toBe(true)
  })

  it('a new agent uses the default model and the server’s step limit', () => {
    const f = { ...emptyForm(), id: 'new', name: ' New ' }
    expect(toPutRequest(f)).toMatchObject({ name: 'New', model: null, max_steps: null, tool_policies: {}, skills: null, tools: null })
  })

  it('names what is wrong before sending', () => {
    const ok = { ...emptyForm(), id: 'a-1_b', name: 'A' }
    expect(formProblem(ok)).toBeNull()
    expect(formProblem({ ...ok, id: 'Has Caps' })).toBe('id')
    expect(formProblem({ ...ok, id: 'x'.repeat(33) })).toBe('id')
    expect(formProblem({ ...ok, name: '  ' })).toBe('name')
    expect(formProblem({ ...ok, instructions: 'x'.repeat(32_001) })).toBe('instructions')
    expect(formProblem({ ...ok, allowedRoles: 'admin, owner' })).toBe('roles')
    expect(formProblem({ ...ok, allowedRoles: 'admin, user' })).toBeNull()
    expect(formProblem({ ...ok, maxSteps: '0' })).toBe('maxSteps')
    expect(formProblem({ ...ok, maxSteps: '12' })).toBeNull()
  })
})
