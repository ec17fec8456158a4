// The form that makes or changes a schedule (/schedules): name, prompt, agent,
// when (a cron pattern with presets, every N minutes, or once at a date and
// time), timezone (a new schedule's starts as yours, `GET /v1/me/timezone`, with
// this browser's one click away), where the runs go, which channels their
// notifications also go to, and what late or overlapping fires do. As
// the person types, the trigger is previewed (`POST /v1/schedules/preview`,
// debounced; an older answer never replaces a newer one): in words and its next
// five times, or the server's reason next to the field it names. A refused save
// shows its reason the same way; the form keeps everything typed.

import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react'
import { Link } from 'react-router'
import { ApiError, api } from '../api'
import { deliverNames, toggleChoice } from '../channels'
import { KindTag } from './Deliveries'
import { Field } from './Field'
import { TimezoneInput, ZoneShortcuts } from './TimezoneInput'
import { useI18n, type MessageKey } from '../i18n'
import {
  CRON_PRESETS,
  createRequest,
  emptyForm,
  fieldError,
  fmtZoned,
  formFromSchedule,
  patchRequest,
  presetOf,
  triggerFromForm,
  type FormField,
  type ScheduleForm,
  type TriggerKind,
} from '../schedules'
import { browserTimezone, newScheduleTimezone } from '../timezone'
import type { Agent, Channel, Schedule, SchedulePreview, Session, TimezoneDto } from '../types'
import { errText } from '../pages/useTurns'

/** How long typing pauses before the trigger is previewed. */
const PREVIEW_DEBOUNCE_MS = 350

type Errors = Partial<Record<FormField, string>>

const KIND_LABEL: Record<TriggerKind, MessageKey> = {
  cron: 'schedules.kind.cron',
  every: 'schedules.kind.every',
  at: 'schedules.kind.at',
}

export function ScheduleEditor(p: {
  schedule?: Schedule
  agents: Agent[]
  sessions: Session[]
  channels: Channel[]
  onSaved: (s: Schedule) => void
  onCancel: () => void
}) {
  const { t } = useI18n()
  // A new schedule's timezone is empty (the server's choice: yours) until yours is known.
  const [form, setForm] = useState<ScheduleForm>(() => (p.schedule ? formFromSchedule(p.schedule) : emptyForm('')))
  const [errors, setErrors] = useState<Errors>({})
  const [formError, setFormError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const preview = usePreview(form)
  const browser = useMemo(browserTimezone, [])
  const yours = useYourTimezone()

  // A new schedule starts in yours once it is known (this browser's if it cannot be), unless a zone was typed.
  const isNew = !p.schedule
  useEffect(() => {
    if (!isNew || yours === undefined) return
    const zone = newScheduleTimezone(yours, browser)
    setForm((f) => (f.timezone.trim() ? f : { ...f, timezone: zone }))
  }, [isNew, yours, browser])
  const yourZone = yours?.effective || yours?.timezone || null

  // A new schedule starts with the default agent, once the agents are known.
  useEffect(() => {
    if (!form.agent && p.agents.length) {
      const agent = (p.agents.find((a) => a.default) ?? p.agents[0]).id
      setForm((f) => (f.agent ? f : { ...f, agent }))
    }
  }, [p.agents, form.agent])

  const set = <K extends keyof ScheduleForm>(key: K, value: ScheduleForm[K], field?: FormField) => {
    setForm((f) => ({ ...f, [key]: value }))
    if (field) setErrors((e) => ({ ...e, [field]: undefined }))
  }

  async function save(e: FormEvent) {
    e.preventDefault()
    setFormError(null)
    const s = p.schedule
    const built = s ? patchRequest(s, form) : createRequest(form)
    if (!built.ok) {
      setErrors({ [built.field]: t(built.message) })
      return
    }
    setErrors({})
    setBusy(true)
    try {
      p.onSaved(await send(s, form))
    } catch (err) {
      const named = err instanceof ApiError && err.status === 422 ? fieldError(err.message) : null
      if (named?.field) setErrors({ [named.field]: named.text })
      else setFormError(errText(err))
    } finally {
      setBusy(false)
    }
  }

  // What the server said of the trigger or the timezone: a refused save's, else the preview's.
  const shownError = (f: FormField) => errors[f] ?? (preview.error?.field === f ? preview.error.text : undefined)
  const sessionKnown = !form.session || p.sessions.some((x) => x.id === form.session)

  return (
    <form className="card schedule-form" onSubmit={save} data-testid="schedule-form" noValidate>
      <h3>{p.schedule ? t('schedules.editTitle', { name: p.schedule.name }) : t('schedules.newTitle')}</h3>
      <Field label={t('schedules.name')} error={errors.name} testid="name">
        <input
          value={form.name}
          maxLength={200}
          placeholder={t('schedules.namePlaceholder')}
          onChange={(e) => set('name', e.target.value, 'name')}
          data-testid="schedule-name"
        />
      </Field>
      <Field label={t('schedules.agent')} error={errors.agent} testid="agent">
        <select value={form.agent} onChange={(e) => set('agent', e.target.value, 'agent')} data-testid="schedule-agent">
          {!p.agents.some((a) => a.id === form.agent) && <option value={form.agent}>{form.agent || '…'}</option>}
          {p.agents.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name || a.id}
            </option>
          ))}
        </select>
      </Field>
      <Field label={t('schedules.prompt')} error={errors.prompt} testid="prompt" wide>
        <textarea
          rows={3}
          value={form.prompt}
          placeholder={t('schedules.promptPlaceholder')}
          onChange={(e) => set('prompt', e.target.value, 'prompt')}
          data-testid="schedule-prompt"
        />
      </Field>
      <fieldset className="wide schedule-when">
        <legend>{t('schedules.when')}</legend>
        <div className="schedule-kinds" role="radiogroup" aria-label={t('schedules.when')}>
          {(['cron', 'every', 'at'] as TriggerKind[]).map((k) => (
            <label key={k} className="check">
              <input
                type="radio"
                name="schedule-kind"
                checked={form.kind === k}
                onChange={() => set('kind', k, 'trigger')}
                data-testid={`schedule-kind-${k}`}
              />
              {t(KIND_LABEL[k])}
            </label>
          ))}
        </div>
        {form.kind === 'cron' && (
          <>
            <div className="cron-presets" data-testid="cron-presets">
              {CRON_PRESETS.map((x) => (
                <button
                  key={x.id}
                  type="button"
                  className="btn small"
                  aria-pressed={presetOf(form.cron)?.id === x.id}
                  onClick={() => set('cron', x.cron, 'trigger')}
                  data-testid={`cron-preset-${x.id}`}
                >
                  {t(x.label)}
                </button>
              ))}
            </div>
            <Field label={t('schedules.cron')} error={shownError('trigger')} testid="trigger" hint={t('schedules.cronHint')}>
              <input
                className="mono"
                value={form.cron}
                spellCheck={false}
                autoComplete="off"
                onChange={(e) => set('cron', e.target.value, 'trigger')}
                data-testid="schedule-cron"
              />
            </Field>
          </>
        )}
        {form.kind === 'every' && (
          <Field label={t('schedules.everyMinutes')} error={shownError('trigger')} testid="trigger">
            <input
              type="number"
              min={1}
              step={1}
              inputMode="numeric"
              value={form.everyMinutes}
              onChange={(e) => set('everyMinutes', e.target.value, 'trigger')}
              data-testid="schedule-every"
            />
          </Field>
        )}
        {form.kind === 'at' && (
          <Field label={t('schedules.at', { tz: form.timezone.trim() || yourZone || '…' })} error={shownError('trigger')} testid="trigger">
            <input
              type="datetime-local"
              step={1}
              value={form.at}
              onChange={(e) => set('at', e.target.value, 'trigger')}
              data-testid="schedule-at"
            />
          </Field>
        )}
        <Field
          label={t('schedules.timezone')}
          error={shownError('timezone')}
          testid="timezone"
          hint={isNew ? t('schedules.timezoneHint') : undefined}
        >
          <TimezoneInput
            value={form.timezone}
            onChange={(z) => set('timezone', z, 'timezone')}
            testid="schedule-timezone"
            extra={[p.schedule?.timezone, yourZone, browser]}
            placeholder={yourZone ? t('timezone.yours', { zone: yourZone }) : undefined}
            invalid={!!shownError('timezone')}
          />
        </Field>
        <ZoneShortcuts
          current={form.timezone.trim() || yourZone || ''}
          yours={yourZone}
          browser={browser}
          onPick={(z) => set('timezone', z, 'timezone')}
          testid="schedule-timezone-use"
        />
        <Preview preview={preview} />
      </fieldset>
      <Field label={t('schedules.target')} error={errors.target} testid="target">
        <select value={form.session} onChange={(e) => set('session', e.target.value, 'target')} data-testid="schedule-target">
          <option value="">{t('schedules.target.new')}</option>
          {!sessionKnown && <option value={form.session}>{form.session}</option>}
          {p.sessions.map((x) => (
            <option key={x.id} value={x.id}>
              {t('schedules.target.session', { title: x.title || t('chat.untitled') })}
            </option>
          ))}
        </select>
      </Field>
      <DeliverField
        channels={p.channels}
        ids={form.deliver}
        error={errors.deliver}
        onIds={(ids) => set('deliver', ids, 'deliver')}
      />
      <Field label={t('schedules.misfire')} testid="misfire">
        <select value={form.misfire} onChange={(e) => set('misfire', e.target.value as ScheduleForm['misfire'])} data-testid="schedule-misfire">
          <option value="run_once">{t('schedules.misfire.run_once')}</option>
          <option value="skip">{t('schedules.misfire.skip')}</option>
        </select>
      </Field>
      <Field label={t('schedules.overlap')} testid="overlap">
        <select value={form.overlap} onChange={(e) => set('overlap', e.target.value as ScheduleForm['overlap'])} data-testid="schedule-overlap">
          <option value="skip">{t('schedules.overlap.skip')}</option>
          <option value="queue">{t('schedules.overlap.queue')}</option>
        </select>
      </Field>
      {formError && (
        <p className="notice error wide" role="alert" data-testid="schedule-form-error">
          {t('schedules.notSaved', { message: formError })}
        </p>
      )}
      <div className="form-bar wide">
        <button className="btn primary" type="submit" disabled={busy} data-testid="schedule-save">
          {busy ? t('memory.saving') : p.schedule ? t('schedules.save') : t('schedules.create')}
        </button>
        <button className="btn ghost" type="button" onClick={p.onCancel} data-testid="schedule-cancel">
          {t('memory.cancel')}
        </button>
      </div>
    </form>
  )
}

/** Makes the schedule, or changes what the form changed (nothing changed: nothing sent). */
async function send(s: Schedule | undefined, form: ScheduleForm): Promise<Schedule> {
  if (!s) {
    const built = createRequest(form)
    if (!built.ok) throw new Error(built.message)
    return api.createSchedule(built.value)
  }
  const built = patchRequest(s, form)
  if (!built.ok) throw new Error(built.message)
  return Object.keys(built.value).length ? api.updateSchedule(s.id, built.value) : s
}

/** Which of the person's channels the schedule's notifications also go to (a channel gone since shows its id). */
function DeliverField(p: { channels: Channel[]; ids: string[]; error?: string; onIds: (ids: string[]) => void }) {
  const { t } = useI18n()
  const known = p.channels.map((c) => ({ id: c.id, name: c.name, kind: c.target.kind }))
  const gone = deliverNames(p.ids, p.channels).filter((c) => !c.kind)
  return (
    <fieldset className="wide tools-field kb-field" data-testid="field-deliver">
      <legend>{t('schedules.deliver')}</legend>
      <span className="muted small">{t('schedules.deliverHint')}</span>
      {!p.channels.length && (
        <span className="muted small" data-testid="schedule-deliver-none">
          {t('schedules.deliverNone')} <Link to="/channels">{t('schedules.deliverMake')}</Link>
        </span>
      )}
      <div className="kb-choices">
        {[...known, ...gone].map((c) => (
          <label key={c.id} className="check" title={c.id}>
            <input
              type="checkbox"
              checked={p.ids.includes(c.id)}
              onChange={(e) => p.onIds(toggleChoice(p.ids, c.id, e.target.checked))}
              data-testid="schedule-deliver-option"
              data-id={c.id}
            />
            {c.kind && <KindTag kind={c.kind} />}
            {c.name}
          </label>
        ))}
      </div>
      {p.error && (
        <span className="field-error" role="alert" data-testid="field-error">
          {p.error}
        </span>
      )}
    </fieldset>
  )
}

/**
 * Your timezone (`GET /v1/me/timezone`), read when the form opens: undefined until
 * it answers, null when it cannot (the form then starts in this browser's zone).
 */
function useYourTimezone(): TimezoneDto | null | undefined {
  const [yours, setYours] = useState<TimezoneDto | null | undefined>(undefined)
  useEffect(() => {
    let live = true
    api
      .myTimezone()
      .then((dto) => live && setYours(dto))
      .catch(() => live && setYours(null))
    return () => {
      live = false
    }
  }, [])
  return yours
}

interface PreviewState {
  shown: SchedulePreview | null
  error: { field: FormField | null; text: string } | null
  loading: boolean
}

/** The trigger previewed as it is typed (debounced; only the newest answer counts). */
function usePreview(form: ScheduleForm): PreviewState {
  const { t } = useI18n()
  const [state, setState] = useState<PreviewState>({ shown: null, error: null, loading: false })
  const seq = useRef(0)
  const { kind, cron, everyMinutes, at, timezone } = form

  useEffect(() => {
    const mine = ++seq.current
    const built = triggerFromForm({ ...form, kind, cron, everyMinutes, at, timezone })
    if (!built.ok) {
      // Nothing to ask about yet: an empty field says nothing; a malformed number says why.
      const quiet = (kind === 'cron' && !cron.trim()) || (kind === 'at' && !at)
      setState({ shown: null, error: quiet ? null : { field: built.field, text: t(built.message) }, loading: false })
      return
    }
    setState((s) => ({ ...s, loading: true }))
    const h = setTimeout(() => {
      api
        // No zone (yours is not known yet): the server previews in yours.
        .previewSchedule({ trigger: built.value, timezone: timezone.trim() || undefined, count: 5 })
        .then((shown) => mine === seq.current && setState({ shown, error: null, loading: false }))
        .catch((e) => {
          if (mine !== seq.current) return
          const named = e instanceof ApiError && e.status === 422 ? fieldError(e.message) : { field: null, text: errText(e) }
          setState({ shown: null, error: named, loading: false })
        })
    }, PREVIEW_DEBOUNCE_MS)
    return () => clearTimeout(h)
    // Only the trigger's fields and the timezone change the preview.
  }, [kind, cron, everyMinutes, at, timezone, t])

  return state
}

function Preview({ preview }: { preview: PreviewState }) {
  const { t, lang } = useI18n()
  const { shown, error, loading } = preview
  if (error && error.field === null) {
    return (
      <p className="notice error schedule-preview" role="alert" data-testid="schedule-preview-error">
        {error.text}
      </p>
    )
  }
  if (!shown) return null
  return (
    <div className="schedule-preview" aria-live="polite" aria-busy={loading} data-testid="schedule-preview">
      <p className="schedule-describe" data-testid="schedule-preview-describe">
        {shown.describe}
      </p>
      {shown.next.length === 0 ? (
        <p className="muted small">{t('schedules.noNext')}</p>
      ) : (
        <>
          <span className="muted small">{t('schedules.nextTimes', { tz: shown.timezone })}</span>
          <ol className="schedule-next">
            {shown.next.map((n) => (
              <li key={n} data-testid="schedule-preview-time" title={n}>
                {fmtZoned(n, lang)}
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  )
}
