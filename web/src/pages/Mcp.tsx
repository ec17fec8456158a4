// /settings, admins only: the MCP servers (`GET /v1/mcp`) — per server its state as
// the workers see it, transport, policy, tools and last error, and which workers
// reported. Read-only: servers are configured in `[[mcp_servers]]`. The rows are
// built by `mcp.ts`; this file only renders them.

import { useEffect, useState } from 'react'
import { api } from '../api'
import { ErrorLine, Section } from '../components/Section'
import { fmtDate } from '../format'
import { useI18n, type MessageKey, type Translate } from '../i18n'
import { mcpRows, stateTone, type McpRow } from '../mcp'
import type { McpStatusList } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))

const KNOWN_STATES = new Set(['starting', 'ready', 'error', 'stopped'])
const KNOWN_POLICIES = new Set(['auto', 'confirm', 'deny'])

function stateLabel(t: Translate, state: string): string {
  return KNOWN_STATES.has(state) ? t(`mcp.state.${state}` as MessageKey) : state
}

function policyLabel(t: Translate, policy: string): string {
  return KNOWN_POLICIES.has(policy) ? t(`mcp.policy.${policy}` as MessageKey) : policy
}

function toolCount(t: Translate, n: number): string {
  return n === 1 ? t('mcp.toolCountOne') : t('mcp.toolCount', { n })
}

export function McpSection() {
  const { t, lang } = useI18n()
  const [status, setStatus] = useState<McpStatusList | null>(null)
  const [error, setError] = useState<string | null>(null)

  const load = () =>
    api
      .mcpStatus()
      .then((s) => {
        setStatus(s)
        setError(null)
      })
      .catch((e) => setError(errText(e)))
  useEffect(() => {
    void load()
  }, [])

  const rows = status ? mcpRows(status) : []
  return (
    <Section title={t('mcp.title')} testid="mcp">
      <p className="muted">{t('mcp.hint')}</p>
      <ErrorLine error={error} />
      {status && !rows.length && (
        <p className="muted" data-testid="mcp-none">
          {t('mcp.none')}
        </p>
      )}
      {rows.length > 0 && (
        <div className="table-wrap">
          <table className="grid">
            <thead>
              <tr>
                <th>{t('mcp.server')}</th>
                <th>{t('mcp.state')}</th>
                <th>{t('mcp.transport')}</th>
                <th>{t('mcp.policy')}</th>
                <th>{t('mcp.tools')}</th>
                <th>{t('mcp.lastError')}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <Row key={r.name} row={r} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {status && (
        <p className="muted" data-testid="mcp-workers">
          {status.workers.length
            ? t('mcp.workers', {
                workers: status.workers.map((w) => `${w.worker_id} (${fmtDate(w.updated_at, lang)})`).join(', '),
              })
            : t('mcp.noWorkers')}
        </p>
      )}
      <button className="btn ghost small" onClick={() => void load()} data-testid="mcp-refresh">
        {t('mcp.refresh')}
      </button>
    </Section>
  )
}

function Row({ row }: { row: McpRow }) {
  const { t, lang } = useI18n()
  const several = row.reports.length > 1
  return (
    <tr data-testid="mcp-row" data-server={row.name}>
      <td>
        <code>{row.name}</code>
        {!row.configured && (
          <>
            {' '}
            <span className="badge" title={t('mcp.notConfiguredHint')}>
              {t('mcp.notConfigured')}
            </span>
          </>
        )}
      </td>
      <td className="pills">
        {row.reports.length === 0 ? (
          <span className="pill state-unknown" data-testid="mcp-state">
            {t('mcp.noReport')}
          </span>
        ) : (
          row.states.map((state) => {
            const who = row.reports.filter((r) => r.server.state === state)
            const title = who
              .map((r) => `${r.workerId}: ${t('mcp.since', { when: fmtDate(r.server.since, lang) })}`)
              .join('\n')
            return (
              <span key={state} className={`pill state-${stateTone(state)}`} data-testid="mcp-state" title={title}>
                {stateLabel(t, state)}
                {several && ` ×${who.length}`}
              </span>
            )
          })
        )}
      </td>
      <td>{row.transports.join(', ') || '–'}</td>
      <td className="nowrap">{row.policies.map((p) => policyLabel(t, p)).join(', ') || '–'}</td>
      <td>
        {row.tools.length ? (
          <details className="mcp-tools">
            <summary>{toolCount(t, row.tools.length)}</summary>
            <ul className="plain">
              {row.tools.map((tool) => (
                <li key={tool}>
                  <code>{tool}</code>
                </li>
              ))}
            </ul>
          </details>
        ) : (
          toolCount(t, 0)
        )}
      </td>
      <td className="mcp-error">
        {row.lastError ? (
          <span className="form-error" title={`${row.lastError.workerId} · ${fmtDate(row.lastError.since, lang)}`}>{row.lastError.message}</span>
        ) : (
          '–'
        )}
      </td>
    </tr>
  )
}
