// /settings: "Your instructions" (`GET/PUT /v1/me/instructions`, added after every
// agent's) and the agents (`GET /v1/agents`); admins also create, edit and delete
// them (`PUT/DELETE /v1/admin/agents/{id}`). The form's rules live in `agents.ts`.

import { useEffect, useState, type FormEvent } from 'react'
import { api } from '../api'
import {
  BUILTIN_AGENT,
  MAX_INSTRUCTIONS,
  delegateChoices,
  emptyForm,
  formFromAgent,
  formProblem,
  toPutRequest,
  toggleName,
  type AgentForm,
} from '../agents'
import { CharCount } from '../components/CharCount'
import { ErrorLine, Section } from '../components/Section'
import { useI18n, type MessageKey } from '../i18n'
import type { Agent, KnowledgeBase, KnowledgeMode, Model } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))
const chars = (s: string) => [...s].length

export function InstructionsSection() {
  const { t } = useI18n()
  const [saved, setSaved] = useState<string | null>(null)
  const [text, setText] = useState('')
  const [saving, setSaving] = useState(false)
  const [error, setError] = useState<string | null>(null)

  useEffect(() => {
    api
      .instructions()
      .then((s) => {
        setSaved(s)
        setText(s)
      })
      .catch((e) => setError(errText(e)))
  }, [])

  async function save(e: FormEvent) {
    e.preventDefault()
    setSaving(true)
    setError(null)
    try {
      const s = await api.setInstructions(text)
      setSaved(s)
    } catch (err) {
      setError(errText(err))
    } finally {
      setSaving(false)
    }
  }

  const loaded = saved !== null
  const dirty = loaded && text !== saved
  const tooLong = chars(text) > MAX_INSTRUCTIONS
  const state = !loaded ? t('chat.loading') : saving ? t('settings.saving') : dirty ? t('settings.unsaved') : t('settings.saved')
  return (
    <Section title={t('settings.instructions')} testid="instructions">
      <p className="muted">{t('settings.instructionsHint')}</p>
      <form className="instructions-form" onSubmit={save}>
        <textarea
          rows={6}
          value={text}
          disabled={!loaded}
          placeholder={t('settings.instructionsPlaceholder')}
          aria-label={t('settings.instructions')}
          data-testid="instructions-text"
          onChange={(e) => setText(e.target.value)}
        />
        <div className="form-bar">
          <CharCount n={chars(text)} max={MAX_INSTRUCTIONS} testid="instructions-count" />
          <span className="spacer" />
          <span className={`save-state ${dirty ? 'dirty' : ''}`} role="status" data-testid="instructions-state">
            {state}
          </span>
          <button className="btn primary" type="submit" disabled={!dirty || saving || tooLong} data-testid="instructions-save">
            {t('sessions.save')}
          </button>
        </div>
      </form>
      <ErrorLine error={error} />
    </Section>
  )
}

export function AgentsSection({ admin }: { admin: boolean }) {
  const { t } = useI18n()
  const [agents, setAgents] = useState<Agent[]>([])
  const [models, setModels] = useState<Model[]>([])
  const [error, setError] = useState<string | null>(null)
  /** the form, and the agent it edits (none: a new one) */
  const [editing, setEditing] = useState<{ form: AgentForm; agent?: Agent } | null>(null)

  const load = () =>
    api
      .agents()
      .then(setAgents)
      .catch((e) => setError(errText(e)))
  useEffect(() => {
    void load()
    if (admin) api.models().then(setModels).catch(() => {})
  }, [admin])

  async function remove(a: Agent) {
    if (!window.confirm(t('agents.confirmDelete', { name: a.name || a.id }))) return
    setError(null)
    try {
      await api.deleteAgent(a.id)
      setAgents((cur) => cur.filter((x) => x.id !== a.id))
    } catch (err) {
      setError(errText(err))
    }
  }

  return (
    <Section title={t('agents.title')} testid="agents">
      <p className="muted">{t(admin ? 'agents.hintAdmin' : 'agents.hint')}</p>
      <ErrorLine error={error} />
      <div className="table-wrap">
        <table className="grid agents">
          <thead>
            <tr>
              <th>{t('agents.name')}</th>
              <th>{t('agents.description')}</th>
              <th>{t('agents.model')}</th>
              <th>{t('agents.tools')}</th>
              {admin && <th />}
            </tr>
          </thead>
          <tbody>
            {agents.map((a) => (
              <tr key={a.id} data-testid={`agent-${a.id}`}>
                <td>
                  {a.name} <code>{a.id}</code> {a.default && <span className="badge">{t('settings.default')}</span>}
                </td>
                <td>{a.description}</td>
                <td>{a.model ? <code>{a.model}</code> : <span className="muted">{t('agents.defaultModel')}</span>}</td>
                <td>
                  {a.tools ? a.tools.length ? a.tools.join(', ') : t('agents.noTools') : t('agents.allTools')}
                  {!!a.knowledge?.length && (
                    <div className="muted small" data-testid="agent-knowledge-summary">
                      {t('agents.knowledgeSummary', {
                        names: a.knowledge.join(', '),
                        mode: t(a.knowledge_mode === 'auto' ? 'agents.modeAuto' : 'agents.modeTool'),
                      })}
                    </div>
                  )}
                  {!!a.delegates?.length && (
                    <div className="muted small" data-testid="agent-delegates-summary">
                      {t('agents.delegatesSummary', { names: a.delegates.join(', ') })}
                    </div>
                  )}
                  {a.memory === false && (
                    <div className="muted small" data-testid="agent-memory-off">
                      {t('agents.memoryOff')}
                    </div>
                  )}
                </td>
                {admin && (
                  <td className="actions">
                    <button
                      className="btn ghost small"
                      onClick={() => setEditing({ form: formFromAgent(a), agent: a })}
                      data-testid="agent-edit"
                    >
                      {t('agents.edit')}
                    </button>
                    {a.id !== BUILTIN_AGENT && (
                      <button className="btn ghost small danger-text" onClick={() => remove(a)} data-testid="agent-delete">
                        {t('common.delete')}
                      </button>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {admin && !editing && (
        <button className="btn" onClick={() => setEditing({ form: emptyForm() })} data-testid="agent-new">
          {t('agents.new')}
        </button>
      )}
      {admin && editing && (
        <AgentEditor
          key={editing.agent?.id ?? 'new'}
          initial={editing.form}
          agent={editing.agent}
          agents={agents}
          models={models}
          onCancel={() => setEditing(null)}
          onSaved={() => {
            setEditing(null)
            void load()
          }}
        />
      )}
    </Section>
  )
}

function AgentEditor(p: {
  initial: AgentForm
  agent?: Agent
  /** every agent, to choose its delegates from */
  agents: Agent[]
  models: Model[]
  onCancel: () => void
  onSaved: () => void
}) {
  const { t } = useI18n()
  const [f, setF] = useState(p.initial)
  const [saving, setSaving] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const set = (patch: Partial<AgentForm>) => setF((cur) => ({ ...cur, ...patch }))

  async function save(e: FormEvent) {
    e.preventDefault()
    const problem = formProblem(f)
    if (problem) {
      setError(t(`agents.problem.${problem}` as MessageKey))
      return
    }
    setSaving(true)
    setError(null)
    try {
      await api.putAgent(f.id, toPutRequest(f, p.agent))
      p.onSaved()
    } catch (err) {
      setError(errText(err))
      setSaving(false)
    }
  }

  return (
    <form className="agent-form" onSubmit={save} data-testid="agent-form">
      <h3>{p.agent ? t('agents.editTitle', { name: p.agent.name || p.agent.id }) : t('agents.new')}</h3>
      <label>
        <span>{t('agents.id')}</span>
        <input
          required
          value={f.id}
          readOnly={!!p.agent}
          placeholder="researcher"
          title={t('agents.problem.id')}
          data-testid="agent-id"
          onChange={(e) => set({ id: e.target.value.trim() })}
        />
      </label>
      <label>
        <span>{t('agents.name')}</span>
        <input required maxLength={100} value={f.name} data-testid="agent-name" onChange={(e) => set({ name: e.target.value })} />
      </label>
      <label>
        <span>{t('agents.description')}</span>
        <input maxLength={1000} value={f.description} data-testid="agent-description" onChange={(e) => set({ description: e.target.value })} />
      </label>
      <label>
        <span>{t('agents.model')}</span>
        <select value={f.model} data-testid="agent-model" onChange={(e) => set({ model: e.target.value })}>
          <option value="">{t('agents.defaultModel')}</option>
          {p.models.map((m) => (
            <option key={m.id} value={m.id}>
              {m.id}
            </option>
          ))}
          {f.model && !p.models.some((m) => m.id === f.model) && <option value={f.model}>{f.model}</option>}
        </select>
      </label>
      <label className="wide">
        <span>
          {t('agents.instructions')} <CharCount n={chars(f.instructions)} max={MAX_INSTRUCTIONS} />
        </span>
        <textarea
          rows={6}
          value={f.instructions}
          data-testid="agent-instructions"
          onChange={(e) => set({ instructions: e.target.value })}
        />
      </label>
      <fieldset className="wide tools-field">
        <legend>{t('agents.tools')}</legend>
        <label className="check">
          <input type="checkbox" checked={f.allTools} data-testid="agent-all-tools" onChange={(e) => set({ allTools: e.target.checked })} />
          {t('agents.allTools')}
        </label>
        <input
          value={f.tools}
          disabled={f.allTools}
          placeholder="current_time, web_fetch, mcp:docs"
          aria-label={t('agents.toolList')}
          data-testid="agent-tools"
          onChange={(e) => set({ tools: e.target.value })}
        />
        <span className="muted small">{t('agents.toolsHint')}</span>
      </fieldset>
      <label>
        <span>{t('agents.maxSteps')}</span>
        <input
          inputMode="numeric"
          value={f.maxSteps}
          placeholder={t('agents.maxStepsDefault')}
          data-testid="agent-max-steps"
          onChange={(e) => set({ maxSteps: e.target.value })}
        />
      </label>
      <fieldset className="wide tools-field">
        <legend>{t('agents.access')}</legend>
        <input
          value={f.allowedUsers}
          placeholder="alice, lark:ou_…"
          aria-label={t('agents.allowedUsers')}
          data-testid="agent-allowed-users"
          onChange={(e) => set({ allowedUsers: e.target.value })}
        />
        <input
          value={f.allowedRoles}
          placeholder="admin, user"
          aria-label={t('agents.allowedRoles')}
          data-testid="agent-allowed-roles"
          onChange={(e) => set({ allowedRoles: e.target.value })}
        />
        <span className="muted small">{t('agents.accessHint')}</span>
      </fieldset>
      <KnowledgeField
        names={f.knowledge}
        mode={f.knowledgeMode}
        onNames={(knowledge) => set({ knowledge })}
        onMode={(knowledgeMode) => set({ knowledgeMode })}
      />
      <DelegatesField agents={p.agents} self={f.id} ids={f.delegates} onIds={(delegates) => set({ delegates })} />
      <fieldset className="wide tools-field" data-testid="agent-memory-field">
        <legend>{t('agents.memoryField')}</legend>
        <label className="check">
          <input type="checkbox" checked={f.memory} data-testid="agent-memory" onChange={(e) => set({ memory: e.target.checked })} />
          {t('agents.memory')}
        </label>
        <span className="muted small">{t('agents.memoryHint')}</span>
      </fieldset>
      <label className="check">
        <input type="checkbox" checked={f.default} data-testid="agent-default" onChange={(e) => set({ default: e.target.checked })} />
        {t('agents.makeDefault')}
      </label>
      <ErrorLine error={error} />
      <div className="form-bar wide">
        <span className="spacer" />
        <button type="button" className="btn ghost" onClick={p.onCancel}>
          {t('sessions.cancel')}
        </button>
        <button type="submit" className="btn primary" disabled={saving} data-testid="agent-save">
          {saving ? t('settings.saving') : t('sessions.save')}
        </button>
      </div>
    </form>
  )
}

/**
 * The bases an agent searches (by name, as the admin sees them: their own and the
 * shared ones; a name chosen before but not found now stays, marked) and how.
 */
function KnowledgeField(p: {
  names: string[]
  mode: KnowledgeMode
  onNames: (names: string[]) => void
  onMode: (mode: KnowledgeMode) => void
}) {
  const { t } = useI18n()
  const [bases, setBases] = useState<KnowledgeBase[] | null>(null)
  useEffect(() => {
    api
      .listKnowledge()
      .then(setBases)
      .catch(() => setBases([]))
  }, [])
  const known = [...new Set((bases ?? []).map((b) => b.name))]
  const missing = bases ? p.names.filter((n) => !known.includes(n)) : []
  const describe = (name: string) => bases?.find((b) => b.name === name)?.description
  return (
    <fieldset className="wide tools-field kb-field" data-testid="agent-knowledge">
      <legend>{t('agents.knowledge')}</legend>
      <span className="muted small">{t('agents.knowledgeHint')}</span>
      {bases && !known.length && !missing.length && <span className="muted small">{t('agents.knowledgeNone')}</span>}
      <div className="kb-choices">
        {[...known, ...missing].map((name) => (
          <label key={name} className="check" title={describe(name)}>
            <input
              type="checkbox"
              checked={p.names.includes(name)}
              data-testid="agent-knowledge-base"
              data-name={name}
              onChange={(e) => p.onNames(toggleName(p.names, name, e.target.checked))}
            />
            {missing.includes(name) ? t('agents.knowledgeMissing', { name }) : name}
          </label>
        ))}
      </div>
      <span className="small">{t('agents.knowledgeMode')}</span>
      {(['tool', 'auto'] as const).map((m) => (
        <label key={m} className="check">
          <input
            type="radio"
            name="knowledge-mode"
            value={m}
            checked={p.mode === m}
            data-testid={`agent-knowledge-mode-${m}`}
            onChange={() => p.onMode(m)}
          />
          <span>
            <strong>{t(m === 'tool' ? 'agents.modeTool' : 'agents.modeAuto')}</strong> —{' '}
            {t(m === 'tool' ? 'agents.modeToolHint' : 'agents.modeAutoHint')}
          </span>
        </label>
      ))}
    </fieldset>
  )
}

/**
 * The agents it may hand tasks to (`delegate`): every other agent, and any id
 * chosen before that is not one now, marked.
 */
function DelegatesField(p: { agents: Agent[]; self: string; ids: string[]; onIds: (ids: string[]) => void }) {
  const { t } = useI18n()
  const choices = delegateChoices(p.agents, p.self, p.ids)
  return (
    <fieldset className="wide tools-field kb-field" data-testid="agent-delegates">
      <legend>{t('agents.delegates')}</legend>
      <span className="muted small">{t('agents.delegatesHint')}</span>
      {!choices.length && <span className="muted small">{t('agents.delegatesNone')}</span>}
      <div className="kb-choices">
        {choices.map((c) => (
          <label key={c.id} className="check" title={c.id}>
            <input
              type="checkbox"
              checked={p.ids.includes(c.id)}
              data-testid="agent-delegate"
              data-id={c.id}
              onChange={(e) => p.onIds(toggleName(p.ids, c.id, e.target.checked))}
            />
            {c.missing ? t('agents.delegateMissing', { name: c.id }) : c.name}
          </label>
        ))}
      </div>
    </fieldset>
  )
}
