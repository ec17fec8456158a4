// The files of a message being written, and of messages just sent from this tab.
//
// Drafts come from the picker, a drop or a paste; each is checked against the
// limits as it comes (a file that would break one is left out, and the composer
// says why). An image's thumbnail is an object URL, made once when it is added.
//
// Nobody revokes an object URL by hand: `useObjectUrls` revokes each once nothing
// on screen shows it any more — not the composer, not a message being sent, not a
// sent message whose files the server has not listed yet — and all of them when
// the chat closes. A failed send puts its drafts back in the same update that
// drops its pending message, so their thumbnails survive it.

import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import {
  admit,
  DEFAULT_LIMITS,
  kindOf,
  pastedName,
  shownFromDraft,
  shownFromServer,
  type Draft,
  type Problem,
  type ShownFile,
} from '../attachments'
import type { Message } from '../types'

export interface Drafts {
  items: Draft[]
  /** why the files last offered were not all added */
  problems: Problem[]
  add: (files: File[]) => void
  /** like `add`, naming nameless clipboard images `pasted-image-<n>.png` */
  addPasted: (files: File[]) => void
  remove: (id: string) => void
  /** empties the composer for a send */
  take: () => Draft[]
  /** after a failed send: the files are back, before any added meanwhile */
  restore: (items: Draft[]) => void
  dismissProblems: () => void
}

let seq = 0

export function useDrafts(limits = DEFAULT_LIMITS): Drafts {
  const [items, setItems] = useState<Draft[]>([])
  const [problems, setProblems] = useState<Problem[]>([])
  // The truth between renders: two pastes in one tick must both see the first.
  const current = useRef<Draft[]>([])
  const commit = useCallback((next: Draft[]) => {
    current.current = next
    setItems(next)
  }, [])

  const offer = useCallback(
    (files: File[], named: (f: File, taken: string[]) => string) => {
      const taken = current.current.map((d) => d.name)
      const candidates = files.map((file) => {
        const name = named(file, taken)
        taken.push(name)
        return { file, name, size: file.size, type: file.type }
      })
      const { accepted, refused } = admit(current.current, candidates, limits)
      const added = accepted.map((c): Draft => {
        const kind = kindOf(c)
        return {
          id: `draft-${++seq}`,
          file: c.file,
          name: c.name,
          kind,
          url: kind === 'image' ? URL.createObjectURL(c.file) : undefined,
        }
      })
      if (added.length) commit([...current.current, ...added])
      setProblems(refused)
    },
    [commit, limits],
  )

  const add = useCallback((files: File[]) => offer(files, (f) => f.name), [offer])
  const addPasted = useCallback((files: File[]) => offer(files, pastedName), [offer])
  const remove = useCallback(
    (id: string) => {
      commit(current.current.filter((d) => d.id !== id))
      setProblems([])
    },
    [commit],
  )
  const take = useCallback(() => {
    const out = current.current
    commit([])
    setProblems([])
    return out
  }, [commit])
  const restore = useCallback(
    (back: Draft[]) => {
      if (back.length) commit([...back, ...current.current])
    },
    [commit],
  )
  const dismissProblems = useCallback(() => setProblems([]), [])

  return useMemo(
    () => ({ items, problems, add, addPasted, remove, take, restore, dismissProblems }),
    [items, problems, add, addPasted, remove, take, restore, dismissProblems],
  )
}

/** Revokes each object URL once it is no longer in `live`, and every one at unmount. */
export function useObjectUrls(live: readonly (string | undefined)[]): void {
  const owned = useRef(new Set<string>())
  const key = live.filter(Boolean).join('\n')
  useEffect(() => {
    const now = new Set(key ? key.split('\n') : [])
    for (const url of owned.current) {
      if (!now.has(url)) {
        URL.revokeObjectURL(url)
        owned.current.delete(url)
      }
    }
    for (const url of now) owned.current.add(url)
  }, [key])
  useEffect(() => {
    const all = owned.current
    return () => {
      for (const url of all) URL.revokeObjectURL(url)
      all.clear()
    }
  }, [])
}

/**
 * Files of messages sent from this tab, by message id: shown from the local
 * copies (thumbnails at once, no download) until the message as the server lists
 * it names them.
 */
export function useSentFiles(messages: Message[]) {
  const [byMessage, setByMessage] = useState<Record<string, Draft[]>>({})

  useEffect(() => {
    setByMessage((cur) => {
      const ids = Object.keys(cur)
      const listed = new Set(messages.filter((m) => m.attachments?.length && ids.includes(m.id)).map((m) => m.id))
      if (!listed.size) return cur
      return Object.fromEntries(Object.entries(cur).filter(([id]) => !listed.has(id)))
    })
  }, [messages])

  const keep = useCallback((messageId: string, files: Draft[]) => {
    if (files.length) setByMessage((cur) => ({ ...cur, [messageId]: files }))
  }, [])

  const shown = useCallback(
    (m: Message): ShownFile[] | undefined =>
      m.attachments?.length ? m.attachments.map(shownFromServer) : byMessage[m.id]?.map(shownFromDraft),
    [byMessage],
  )

  return { byMessage, keep, shown }
}
