// Files dragged onto an area: `over` while they hover it (for the drop-zone
// highlight), `onFiles` when they are dropped. Drags of text or links are left
// alone. Entering and leaving the area's children fire their own events, so
// hovering is counted rather than toggled.

import { useRef, useState, type DragEvent } from 'react'

const carriesFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files')

export function useFileDrop(onFiles: (files: File[]) => void) {
  const [over, setOver] = useState(false)
  const depth = useRef(0)
  const handlers = {
    onDragEnter(e: DragEvent) {
      if (!carriesFiles(e)) return
      e.preventDefault()
      depth.current++
      setOver(true)
    },
    onDragOver(e: DragEvent) {
      if (!carriesFiles(e)) return
      // Without this the browser would open the file in place of the chat.
      e.preventDefault()
      e.dataTransfer.dropEffect = 'copy'
    },
    onDragLeave(e: DragEvent) {
      if (!carriesFiles(e)) return
      depth.current = Math.max(0, depth.current - 1)
      if (!depth.current) setOver(false)
    },
    onDrop(e: DragEvent) {
      if (!carriesFiles(e)) return
      e.preventDefault()
      depth.current = 0
      setOver(false)
      const files = Array.from(e.dataTransfer.files)
      if (files.length) onFiles(files)
    },
  }
  return { over, handlers }
}
