import { describe, expect, it } from 'vitest'
import { detectLang, translator } from './i18n'

describe('i18n', () => {
  it('defaults to the browser language, preferring a stored choice', () => {
    expect(detectLang(null, ['zh-CN', 'en'])).toBe('zh')
    expect(detectLang(null, ['en-GB', 'zh-CN'])).toBe('en')
    expect(detectLang(null, ['fr-FR', 'zh-TW'])).toBe('zh')
    expect(detectLang(null, ['de'])).toBe('en')
    expect(detectLang('en', ['zh-CN'])).toBe('en')
    expect(detectLang('bogus', ['zh'])).toBe('zh')
  })

  it('translates with variables', () => {
    expect(translator('en')('chat.attempt', { n: 2 })).toBe('Attempt 2')
    expect(translator('zh')('chat.attempt', { n: 2 })).toBe('第 2 次尝试')
    expect(translator('zh')('nav.settings')).toBe('设置')
  })
})
