// Who is signed in. The session cookie is HttpOnly, so the only way to know is to
// ask `GET /v1/me`; any 401 afterwards sends the user back to /login.

import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react'
import { ApiError, api, setUnauthorizedHandler } from './api'
import type { User } from './types'

interface Auth {
  /** undefined while loading, null when signed out */
  user: User | null | undefined
  signIn: (username: string, password: string) => Promise<User>
  signOut: () => Promise<void>
}

const Ctx = createContext<Auth | null>(null)

export function AuthProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined)

  useEffect(() => {
    let live = true
    api
      .me()
      .then((u) => live && setUser(u))
      .catch((e) => {
        if (!live) return
        // Anything but 401 (gateway down, …) also lands on /login, which shows the error on submit.
        setUser(null)
        if (!(e instanceof ApiError) || e.status !== 401) console.warn('GET /v1/me failed', e)
      })
    setUnauthorizedHandler(() => setUser(null))
    return () => {
      live = false
      setUnauthorizedHandler(undefined)
    }
  }, [])

  const signIn = useCallback(async (username: string, password: string) => {
    const res = await api.login(username, password)
    setUser(res.user)
    return res.user
  }, [])

  const signOut = useCallback(async () => {
    try {
      await api.logout()
    } finally {
      setUser(null)
    }
  }, [])

  const value = useMemo(() => ({ user, signIn, signOut }), [user, signIn, signOut])
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>
}

export function useAuth(): Auth {
  const v = useContext(Ctx)
  if (!v) throw new Error('useAuth outside AuthProvider')
  return v
}
