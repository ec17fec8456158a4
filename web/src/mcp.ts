// The admin view of MCP servers (`GET /v1/mcp`), kept pure so it is tested
// without a browser. The gateway lists the servers its configuration names and,
// separately, what each worker that reported in the last minute sees. Workers may
// disagree (one could not start a server another runs) or carry a configuration
// the gateway does not, so the view is one row per server name, holding every
// worker's report of it.

import type { McpServer, McpStatusList } from './types'

export interface McpReport {
  workerId: string
  server: McpServer
}

export interface McpRow {
  name: string
  /** in the gateway's `[[mcp_servers]]` */
  configured: boolean
  /** one per worker that reported this server, in the order the workers were listed */
  reports: McpReport[]
  /** the distinct states the workers report, worst first */
  states: string[]
  /** the tools any worker offers, sorted */
  tools: string[]
  /** the distinct transports and policies reported */
  transports: string[]
  policies: string[]
  /** the most recent error any worker reports, with who reported it */
  lastError?: { workerId: string; message: string; since: string }
}

const SEVERITY: Record<string, number> = { error: 0, stopped: 1, starting: 2, ready: 3 }
const severity = (state: string) => SEVERITY[state] ?? -1

/** Configured servers first, in configuration order; then servers only workers know. */
export function mcpRows(status: McpStatusList): McpRow[] {
  const byName = new Map<string, McpReport[]>()
  for (const w of status.workers) {
    for (const server of w.servers) {
      const list = byName.get(server.name) ?? []
      list.push({ workerId: w.worker_id, server })
      byName.set(server.name, list)
    }
  }
  const names = [...status.configured]
  for (const name of [...byName.keys()].sort()) if (!names.includes(name)) names.push(name)
  return names.map((name) => {
    const reports = byName.get(name) ?? []
    const distinct = (pick: (s: McpServer) => string) => [...new Set(reports.map((r) => pick(r.server)))]
    let lastError: McpRow['lastError']
    for (const r of reports) {
      const message = r.server.last_error
      if (message && (!lastError || r.server.since > lastError.since)) {
        lastError = { workerId: r.workerId, message, since: r.server.since }
      }
    }
    return {
      name,
      configured: status.configured.includes(name),
      reports,
      states: distinct((s) => s.state).sort((a, b) => severity(a) - severity(b)),
      tools: [...new Set(reports.flatMap((r) => r.server.tools))].sort(),
      transports: distinct((s) => s.transport),
      policies: distinct((s) => s.policy),
      lastError,
    }
  })
}

/** The pill colour of a server state; unknown states are shown plainly. */
export function stateTone(state: string): 'ok' | 'warn' | 'bad' | 'off' | 'unknown' {
  switch (state) {
    case 'ready':
      return 'ok'
    case 'starting':
      return 'warn'
    case 'error':
      return 'bad'
    case 'stopped':
      return 'off'
    default:
      return 'unknown'
  }
}
