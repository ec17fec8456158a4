// /settings, admins only: the live config (`GET/PUT /v1/admin/settings`,
// `POST /v1/admin/reload`). Models, limits, tools (policies and the web tools)
// and MCP servers, each edited as JSON and saved whole; the server checks the
// whole config first and answers what changed (or what is wrong, changing
// nothing). Secrets show as `••••••` and keep their value when left so.

import { useEffect, useState } from 'react'
import { api } from '../api'
import { ErrorLine, Section } from '../components/Section'
import { useI18n, type MessageKey } from '../i18n'
import type { ConfigChange, SettingsView } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** The sections the server lets admins set (`reload::SETTABLE`). */
export const CONFIG_SECTIONS = ['models', 'limits', 'tools', 'mcp_servers'] as const
export type ConfigSection = (typeof CONFIG_SECTIONS)[number]

/** A section's text as the editor shows it. */
export function sectionText(settings: Record<string, unknown>, key: ConfigSection): string {
  return JSON.stringify(settings[key] ?? null, null, 2)
}

/** The edited text as the value to save, or why it cannot be. */
export function parseSection(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) }
  } catch (e) {
    return { error: errText(e) }
  }
}

export function ConfigSection() {
  const { t } = useI18n()
  const [view, setView] = useState<SettingsView | null>(null)
  const [texts, setTexts] = useState<Partial<Record<ConfigSection, string>>>({})
  const [changes, setChanges] = useState<ConfigChange[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  const load = () =>
    api
      .settings()
      .then((v) => {
        setView(v)
        const s = v.settings as Record<string, unknown>
        setTexts(Object.fromEntries(CONFIG_SECTIONS.map((k) => [k, sectionText(s, k)])))
      })
      .catch((e) => setError(errText(e)))
  useEffect(() => {
    void load()
  }, [])

  async function act(run: () => Promise<{ changes: ConfigChange[] }>) {
    setBusy(true)
    setError(null)
    setChanges(null)
    try {
      setChanges((await run()).changes)
      await load()
    } catch (e) {
      setError(errText(e))
    } finally {
      setBusy(false)
    }
  }

  function save(key: ConfigSection) {
    const parsed = parseSection(texts[key] ?? '')
    if ('error' in parsed) {
      setChanges(null)
      setError(t('config.badJson', { section: key, error: parsed.error }))
      return
    }
    void act(() => api.saveSettings({ [key]: parsed.value }))
  }

  return (
    <Section title={t('config.title')} testid="config">
      <p className="muted">{t('config.hint')}</p>
      <ErrorLine error={error} />
      {changes && (
        <div className="config-changes" data-testid="config-changes">
          {changes.length === 0 ? (
            <p className="muted">{t('config.nothing')}</p>
          ) : (
            <ul>
              {changes.map((c) => (
                <li key={c.key}>
                  <code>{c.key}</code>: {c.change}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <p>
        <button type="button" disabled={busy} data-testid="config-reload" onClick={() => void act(() => api.reloadConfig())}>
          {t('config.reload')}
        </button>{' '}
        {view && <span className="muted">{t('config.version', { n: view.version })}</span>}
      </p>
      {view &&
        CONFIG_SECTIONS.map((key) => (
          <div className="config-section" key={key} data-testid={`config-${key}`}>
            <h3>{t(`config.section.${key}` as MessageKey)}</h3>
            <textarea
              spellCheck={false}
              rows={Math.min(24, Math.max(4, (texts[key] ?? '').split('\n').length))}
              value={texts[key] ?? ''}
              onChange={(e) => setTexts((cur) => ({ ...cur, [key]: e.target.value }))}
            />
            <button type="button" disabled={busy} onClick={() => save(key)}>
              {t('config.save')}
            </button>
          </div>
        ))}
    </Section>
  )
}
