// The upload list of one knowledge base: files are sent one per request, in the
// order picked, each with its own row (waiting → uploading n% → indexing → ready,
// or failed with the server's message). A refused file does not stop the others.
// Rows still indexing follow their document through `told` (an event of the
// base's stream) and `follow` (the documents list, read when the stream opens or
// resyncs). The rules are `uploadsReducer` (knowledge.ts).

import { useCallback, useReducer, useRef } from 'react'
import { uploadKnowledgeDocument } from '../api'
import { uploadsReducer, type PickedFile, type UploadAction, type UploadRow } from '../knowledge'
import type { KnowledgeDocument, KnowledgeEvent } from '../types'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))

export function useUploads(knowledgeId: string, fallback: string, onStored: () => void) {
  const [rows, dispatch] = useReducer(
    (r: UploadRow[], a: UploadAction) => uploadsReducer(r, a, fallback),
    [] as UploadRow[],
  )
  // Uploads picked while others are under way wait for them: one request at a time.
  const chain = useRef<Promise<void>>(Promise.resolve())
  const seq = useRef(0)
  const stored = useRef(onStored)
  stored.current = onStored

  const add = useCallback(
    (files: PickedFile[]) => {
      if (!files.length) return
      const items = files.map((f) => ({ key: `up-${++seq.current}`, path: f.path, bytes: f.file.size, file: f.file }))
      dispatch({ type: 'add', rows: items.map(({ key, path, bytes }) => ({ key, path, bytes })) })
      chain.current = chain.current.then(async () => {
        for (const it of items) {
          dispatch({ type: 'progress', key: it.key, pct: 0 })
          try {
            const up = await uploadKnowledgeDocument(knowledgeId, it.file, it.file.name, (pct) =>
              dispatch({ type: 'progress', key: it.key, pct }),
            )
            dispatch({ type: 'uploaded', key: it.key, doc: up.document, created: up.created, at: performance.now() })
            stored.current()
          } catch (e) {
            dispatch({ type: 'refused', key: it.key, error: errText(e) })
          }
        }
      })
    },
    [knowledgeId],
  )

  /** `asOf`: `performance.now()` when the list was asked for. */
  const follow = useCallback(
    (documents: readonly KnowledgeDocument[], asOf: number) => dispatch({ type: 'documents', documents, asOf }),
    [],
  )
  const told = useCallback((ev: KnowledgeEvent) => {
    if (ev.type === 'document') dispatch({ type: 'document', document: ev.document })
    else if (ev.type === 'document_deleted') dispatch({ type: 'deleted', id: ev.document_id })
  }, [])
  const clear = useCallback(() => dispatch({ type: 'clear' }), [])
  return { rows, add, follow, told, clear }
}
