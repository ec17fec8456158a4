import { describe, expect, it } from 'vitest'
import { checkNewPassword, signIns, storageShare } from './account'
import type { ApiToken } from './types'

const token = (id: string, over: Partial<ApiToken> = {}): ApiToken => ({
  id,
  name: 'login',
  kind: 'login',
  created_at: '2025-03-01T10:00:00Z',
  last_used_at: null,
  expires_at: '2025-03-31T10:00:00Z',
  current: false,
  ...over,
})

describe('checkNewPassword', () => {
  it('wants at least 8 characters', () => {
    expect(checkNewPassword('', '')).toBe('too_short')
    expect(checkNewPassword('1234567', '1234567')).toBe('too_short')
    expect(checkNewPassword('12345678', '12345678')).toBe('ok')
  })

  it('counts characters as the server does, not UTF-16 units', () => {
    // 4 emoji are 8 UTF-16 units but 4 characters: too short for the server.
    expect(checkNewPassword('🔑🔑🔑🔑', '🔑🔑🔑🔑')).toBe('too_short')
    expect(checkNewPassword('我的新密码很长', '我的新密码很长')).toBe('too_short')
    expect(checkNewPassword('我的新密码真的很长', '我的新密码真的很长')).toBe('ok')
  })

  it('refuses more than 1024 characters', () => {
    expect(checkNewPassword('x'.repeat(1024), 'x'.repeat(1024))).toBe('ok')
    expect(checkNewPassword('x'.repeat(1025), 'x'.repeat(1025))).toBe('too_long')
  })

  it('wants the confirmation to match exactly', () => {
    expect(checkNewPassword('correct horse', 'correct hors')).toBe('mismatch')
    expect(checkNewPassword('correct horse', 'Correct horse')).toBe('mismatch')
    expect(checkNewPassword('correct horse', 'correct horse ')).toBe('mismatch')
  })
})

describe('signIns', () => {
  it('leaves out personal API tokens and keeps sign-ins and bootstrap tokens', () => {
    const list = signIns([
      token('a', { kind: 'api', name: 'cli' }),
      token('l', { kind: 'login' }),
      token('b', { kind: 'bootstrap', name: 'bootstrap' }),
    ])
    expect(list.map((t) => t.id).sort()).toEqual(['b', 'l'])
  })

  it('puts this browser first, then the most recently active', () => {
    const list = signIns([
      token('old', { created_at: '2025-01-01T00:00:00Z' }),
      token('used', { created_at: '2025-01-02T00:00:00Z', last_used_at: '2025-03-05T00:00:00Z' }),
      token('me', { created_at: '2024-12-01T00:00:00Z', current: true }),
      token('new', { created_at: '2025-03-04T00:00:00Z' }),
    ])
    expect(list.map((t) => t.id)).toEqual(['me', 'used', 'new', 'old'])
  })

  it('keeps the server order for equal activity and does not touch its input', () => {
    const input = [token('x'), token('y'), token('z')]
    expect(signIns(input).map((t) => t.id)).toEqual(['x', 'y', 'z'])
    expect(signIns([]).length).toBe(0)
    const mixed = [token('p'), token('q', { current: true })]
    signIns(mixed)
    expect(mixed.map((t) => t.id)).toEqual(['p', 'q'])
  })
})

describe('storageShare', () => {
  it('is a whole percentage of the quota, never 0 % while something is stored', () => {
    expect(storageShare({ used_bytes: 0, limit_bytes: 1000 })).toEqual({ used: 0, limit: 1000, percent: 0, full: false })
    expect(storageShare({ used_bytes: 1, limit_bytes: 1000 })).toMatchObject({ percent: 1, full: false })
    expect(storageShare({ used_bytes: 505, limit_bytes: 1000 })).toMatchObject({ percent: 50, full: false })
    expect(storageShare({ used_bytes: 1000, limit_bytes: 1000 })).toMatchObject({ percent: 100, full: true })
  })

  it('has no percentage without a quota', () => {
    expect(storageShare({ used_bytes: 5, limit_bytes: null })).toEqual({ used: 5, limit: null, percent: null, full: false })
  })
})
