import { describe, expect, it } from 'vitest'
import { contextUse, estimateTokens, fmtMinutes, fmtTokensShort } from './format'

describe('context use in the reply footer', () => {
  it('names windows the way models are named', () => {
    expect(fmtTokensShort(999)).toBe('999')
    expect(fmtTokensShort(1500)).toBe('1.5k')
    expect(fmtTokensShort(32_000)).toBe('32k')
    expect(fmtTokensShort(128_000)).toBe('128k')
    expect(fmtTokensShort(200_000)).toBe('200k')
    expect(fmtTokensShort(1_000_000)).toBe('1M')
    expect(fmtTokensShort(1_048_576)).toBe('1M')
  })

  it('is a percentage of the window', () => {
    expect(contextUse(53_760, 128_000)).toEqual({ pct: '42%', window: '128k' })
    expect(contextUse(16_000, 32_000)).toEqual({ pct: '50%', window: '32k' })
  })

  it('never rounds a used context down to 0% or a nearly full one up to 100%', () => {
    expect(contextUse(12, 128_000)).toEqual({ pct: '<1%', window: '128k' })
    expect(contextUse(127_900, 128_000)).toEqual({ pct: '99%', window: '128k' })
    expect(contextUse(128_000, 128_000)).toEqual({ pct: '100%', window: '128k' })
  })

  it('shows only the tokens when the window is unknown, and nothing when unmeasured', () => {
    expect(contextUse(4_200, 0)).toEqual({ tokens: '4.2k' })
    expect(contextUse(0, 128_000)).toBeNull()
    expect(contextUse(undefined, undefined)).toBeNull()
  })
})

describe('estimateTokens', () => {
  it('counts as the server does: four ASCII characters or one other per token', () => {
    expect(estimateTokens('')).toBe(0)
    expect(estimateTokens('abcd')).toBe(1)
    expect(estimateTokens('abcde')).toBe(2)
    expect(estimateTokens('你好')).toBe(2)
    expect(estimateTokens('hi 你好')).toBe(3)
    expect(estimateTokens('😀')).toBe(1)
  })
})

describe('fmtMinutes', () => {
  it('says how long a run has been going in whole minutes, then hours', () => {
    expect(fmtMinutes(180_000)).toBe('3 min')
    expect(fmtMinutes(239_999)).toBe('3 min')
    expect(fmtMinutes(12 * 60_000 + 59_000)).toBe('12 min')
    expect(fmtMinutes(60 * 60_000)).toBe('1 h')
    expect(fmtMinutes(65 * 60_000 + 30_000)).toBe('1 h 5 min')
  })
})
