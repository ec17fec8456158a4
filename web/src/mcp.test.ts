import { describe, expect, it } from 'vitest'
import { fmtLeft } from './format'
import { mcpRows, stateTone } from './mcp'
import type { McpServer } from './types'

const server = (name: string, over: Partial<McpServer> = {}): McpServer => ({
  name,
  transport: 'stdio',
  policy: 'confirm',
  state: 'ready',
  tools: [],
  last_error: null,
  since: '2026-01-01T10:00:00Z',
  ...over,
})

describe('mcpRows', () => {
  it('is empty when nothing is configured and no worker reports a server', () => {
    expect(mcpRows({ configured: [], workers: [] })).toEqual([])
    expect(mcpRows({ configured: [], workers: [{ worker_id: 'w1', updated_at: 'x', servers: [] }] })).toEqual([])
  })

  it('lists configured servers in order, a silent one without reports', () => {
    const rows = mcpRows({
      configured: ['git', 'files'],
      workers: [{ worker_id: 'w1', updated_at: 'x', servers: [server('files', { tools: ['files__read', 'files__list'] })] }],
    })
    expect(rows.map((r) => [r.name, r.configured, r.reports.length])).toEqual([
      ['git', true, 0],
      ['files', true, 1],
    ])
    expect(rows[0].states).toEqual([])
    expect(rows[1]).toMatchObject({ states: ['ready'], tools: ['files__list', 'files__read'], transports: ['stdio'], policies: ['confirm'] })
  })

  it('merges the workers\' reports of one server, worst state first, newest error', () => {
    const rows = mcpRows({
      configured: ['web'],
      workers: [
        { worker_id: 'w1', updated_at: 'x', servers: [server('web', { transport: 'http', tools: ['web__get'] })] },
        {
          worker_id: 'w2',
          updated_at: 'x',
          servers: [
            server('web', { transport: 'http', state: 'error', last_error: 'connection refused', since: '2026-01-01T10:05:00Z' }),
            server('extra'),
          ],
        },
        {
          worker_id: 'w3',
          updated_at: 'x',
          servers: [server('web', { transport: 'http', state: 'error', last_error: 'old', since: '2026-01-01T09:00:00Z' })],
        },
      ],
    })
    expect(rows.map((r) => r.name)).toEqual(['web', 'extra'])
    const [web, extra] = rows
    expect(web.states).toEqual(['error', 'ready'])
    expect(web.reports.map((r) => r.workerId)).toEqual(['w1', 'w2', 'w3'])
    expect(web.tools).toEqual(['web__get'])
    expect(web.transports).toEqual(['http'])
    expect(web.lastError).toEqual({ workerId: 'w2', message: 'connection refused', since: '2026-01-01T10:05:00Z' })
    // A server a worker runs but the gateway's configuration does not name.
    expect(extra.configured).toBe(false)
  })

  it('colours states, plainly when unknown', () => {
    expect(['ready', 'starting', 'error', 'stopped', 'weird'].map(stateTone)).toEqual(['ok', 'warn', 'bad', 'off', 'unknown'])
  })
})

describe('fmtLeft', () => {
  it('rounds time left up, coarsely', () => {
    expect(fmtLeft(-5)).toBe('0 s')
    expect(fmtLeft(44_200)).toBe('45 s')
    expect(fmtLeft(29 * 60_000 - 1)).toBe('29 min')
    expect(fmtLeft(2 * 3_600_000 + 5 * 60_000)).toBe('2 h 5 min')
    expect(fmtLeft(3_600_000)).toBe('1 h')
  })
})
