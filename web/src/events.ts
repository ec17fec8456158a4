// A tiny in-page signal so the sidebar's recent list refreshes when a page
// creates, renames or deletes a session.

const NAME = 'weft:sessions-changed'

export function sessionsChanged(): void {
  window.dispatchEvent(new Event(NAME))
}

export function onSessionsChanged(fn: () => void): () => void {
  window.addEventListener(NAME, fn)
  return () => window.removeEventListener(NAME, fn)
}
