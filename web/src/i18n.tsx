// English and Simplified Chinese (the strings in locales/). The language defaults to
// the browser's, can be switched anywhere, and is remembered in localStorage.

import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react'

import { en } from './locales/en'
import { zh } from './locales/zh'

export type MessageKey = keyof typeof en

export type Lang = 'en' | 'zh'
export const LANGS: { id: Lang; label: string }[] = [
  { id: 'en', label: 'English' },
  { id: 'zh', label: '简体中文' },
]
const DICTS: Record<Lang, Record<MessageKey, string>> = { en, zh }
const STORAGE_KEY = 'weft.lang'

export function detectLang(stored: string | null, browser: readonly string[]): Lang {
  if (stored === 'en' || stored === 'zh') return stored
  for (const l of browser) {
    const low = l.toLowerCase()
    if (low.startsWith('zh')) return 'zh'
    if (low.startsWith('en')) return 'en'
  }
  return 'en'
}

export type Translate = (key: MessageKey, vars?: Record<string, string | number>) => string

export function translator(lang: Lang): Translate {
  const dict = DICTS[lang]
  return (key, vars) => {
    let s = dict[key] ?? en[key] ?? key
    if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v))
    return s
  }
}

interface I18n {
  lang: Lang
  setLang: (l: Lang) => void
  t: Translate
}

const Ctx = createContext<I18n | null>(null)

function readStored(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY)
  } catch {
    return null
  }
}

export function I18nProvider({ children }: { children: ReactNode }) {
  const [lang, setLangState] = useState<Lang>(() =>
    detectLang(readStored(), navigator.languages?.length ? navigator.languages : [navigator.language]),
  )
  const setLang = useCallback((l: Lang) => {
    setLangState(l)
    try {
      localStorage.setItem(STORAGE_KEY, l)
    } catch {
      // private mode: the choice lasts for this page only
    }
  }, [])
  useEffect(() => {
    document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en'
  }, [lang])
  const value = useMemo(() => ({ lang, setLang, t: translator(lang) }), [lang, setLang])
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>
}

export function useI18n(): I18n {
  const v = useContext(Ctx)
  if (!v) throw new Error('useI18n outside I18nProvider')
  return v
}

export function useT(): Translate {
  return useI18n().t
}
