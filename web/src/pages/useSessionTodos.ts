// The session's todo list: read when the conversation changes (a reply ends, a
// turn is undone or redone), replaced live by a running reply's `todo` events
// (`onLive`). A read that a live event overtook is dropped: it may have been
// answered before the tool stored the list (the user's message shows, the read
// goes out, the reply's `todo` event lands, then the read's older, empty list).

import { useCallback, useEffect, useRef, useState } from 'react'
import { api } from '../api'
import type { Message, TodoItem } from '../types'

export function useSessionTodos(sessionId: string | undefined, messages: Message[]) {
  const [todos, setTodos] = useState<TodoItem[]>([])
  const liveTodos = useRef(0)
  const onLive = useCallback((items: TodoItem[]) => {
    liveTodos.current += 1
    setTodos(items)
  }, [])
  useEffect(() => {
    if (!sessionId) {
      setTodos([])
      return
    }
    let live = true
    const asked = liveTodos.current
    api
      .sessionTodos(sessionId)
      .then((items) => {
        if (live && liveTodos.current === asked) setTodos(items)
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [sessionId, messages])
  return { todos, onLive }
}
