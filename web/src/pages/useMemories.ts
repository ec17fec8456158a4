// The /memory page's data: your memories — every kind in one read, so each tab
// shows its count — searched with `q` as you type (debounced; an older answer never
// replaces a newer one), your switch, and the writes. Without a search the profile
// comes first (`inPageOrder`). Each write applies the server's answer to the list
// (`withSaved` keeps that order) and throws
// what the server refused, for the part of the page that asked to show it.

import { useCallback, useEffect, useRef, useState } from 'react'
import { ApiError, api } from '../api'
import { inPageOrder, withSaved, withoutMemory } from '../memory'
import type { CreateMemory, Memory, MemoryList, PatchMemory } from '../types'
import { errText } from './useTurns'

/** How long typing pauses before a search is sent. */
const SEARCH_DEBOUNCE_MS = 250

/** What was read, and the search it answers ('' for none: the page's order, `inPageOrder`). */
type Shown = MemoryList & { query: string }

export function useMemories() {
  const [q, setQ] = useState('')
  const [query, setQuery] = useState('')
  const [shown, setShown] = useState<Shown | null>(null)
  const [loading, setLoading] = useState(true)
  const [error, setError] = useState<string | null>(null)
  const seq = useRef(0)

  useEffect(() => {
    const h = setTimeout(() => setQuery(q.trim()), SEARCH_DEBOUNCE_MS)
    return () => clearTimeout(h)
  }, [q])

  useEffect(() => {
    const mine = ++seq.current
    setLoading(true)
    api
      .listMemories({ q: query })
      .then((list) => {
        if (mine !== seq.current) return // a newer search answered first
        setShown({ ...list, memories: inPageOrder(list.memories, query !== ''), query })
        setError(null)
      })
      .catch((e) => mine === seq.current && setError(errText(e)))
      .finally(() => mine === seq.current && setLoading(false))
  }, [query])

  const change = useCallback((fn: (s: Shown) => Partial<Shown>) => setShown((s) => s && { ...s, ...fn(s) }), [])
  const saved = useCallback(
    (m: Memory) => change((s) => ({ memories: withSaved(s.memories, m, s.query !== '') })),
    [change],
  )

  const add = useCallback(async (body: CreateMemory) => saved(await api.addMemory(body)), [saved])
  const update = useCallback(async (id: string, body: PatchMemory) => saved(await api.updateMemory(id, body)), [saved])
  const remove = useCallback(
    async (id: string) => {
      try {
        await api.deleteMemory(id)
      } catch (e) {
        // 404: already gone (another tab, the `forget` tool); anything else stays listed.
        if (!(e instanceof ApiError && e.status === 404)) throw e
      }
      change((s) => ({ memories: withoutMemory(s.memories, id) }))
    },
    [change],
  )
  const forgetAll = useCallback(async () => {
    const deleted = await api.forgetMemories()
    change(() => ({ memories: [] }))
    return deleted
  }, [change])
  const setEnabled = useCallback(
    async (on: boolean) => {
      const enabled = await api.setMemoryEnabled(on)
      change(() => ({ enabled }))
    },
    [change],
  )

  return { q, setQ, shown, loading, error, setError, add, update, remove, forgetAll, setEnabled }
}
