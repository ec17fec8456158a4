// A scrolling log that follows its end while the reader is at the end: when the
// content (`content`) grows, the scroller (`scroller`) scrolls to the bottom,
// unless the reader has scrolled more than 80 px up to read earlier messages.

import { useLayoutEffect, useRef } from 'react'

export function useStickyScroll() {
  const scroller = useRef<HTMLDivElement>(null)
  const content = useRef<HTMLDivElement>(null)
  const stuck = useRef(true)
  useLayoutEffect(() => {
    const el = scroller.current
    const inner = content.current
    if (!el || !inner) return
    const onScroll = () => {
      stuck.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80
    }
    const ro = new ResizeObserver(() => {
      if (stuck.current) el.scrollTop = el.scrollHeight
    })
    el.addEventListener('scroll', onScroll, { passive: true })
    ro.observe(inner)
    return () => {
      el.removeEventListener('scroll', onScroll)
      ro.disconnect()
    }
  }, [])
  return { scroller, content }
}
