import { describe, expect, it } from 'vitest'
import { CONFIG_SECTIONS, parseSection, sectionText } from './pages/Config'

describe('the configuration editor', () => {
  it('shows each section as JSON and reads back what was typed', () => {
    const settings = { limits: { runs_per_minute_per_user: 60 }, models: [{ id: 'mock' }] }
    const text = sectionText(settings, 'limits')
    expect(text).toContain('"runs_per_minute_per_user": 60')
    expect(parseSection(text.replace('60', '120'))).toEqual({ value: { runs_per_minute_per_user: 120 } })
    expect(sectionText(settings, 'mcp_servers')).toBe('null')
  })

  it('refuses text that is not JSON before anything is sent', () => {
    const parsed = parseSection('{"runs_per_minute_per_user": }')
    expect('error' in parsed && parsed.error.length > 0).toBe(true)
  })

  it('offers the sections the server lets admins set', () => {
    expect([...CONFIG_SECTIONS]).toEqual(['models', 'limits', 'tools', 'mcp_servers'])
  })
})
