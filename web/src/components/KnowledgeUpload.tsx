// Adding documents to a knowledge base: a drop zone that takes files and whole
// folders (walked with the File and Directory Entries API, hidden entries
// skipped), a file picker and a folder picker, and one row per file that shows
// where it stands. What happens to the files is `useUploads`' business.

import { useRef, useState, type DragEvent } from 'react'
import { useI18n } from '../i18n'
import { errorNote, filesFromDrop, pickedFromList, uploadSummary, type PickedFile, type UploadRow } from '../knowledge'
import { fmtBytes } from '../format'
import { Icon } from './Icon'
import { IngestStage } from './KnowledgeIngest'

const carriesFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes('Files')

export function UploadPanel(p: { rows: UploadRow[]; onFiles: (files: PickedFile[]) => void; onClear: () => void }) {
  const { t } = useI18n()
  const [over, setOver] = useState(false)
  const depth = useRef(0)
  const filesInput = useRef<HTMLInputElement>(null)
  const folderInput = useRef<HTMLInputElement>(null)

  function picked(input: HTMLInputElement) {
    p.onFiles(pickedFromList(Array.from(input.files ?? [])))
    // The same file picked again must fire `change` again.
    input.value = ''
  }

  function onDrop(e: DragEvent) {
    if (!carriesFiles(e)) return
    e.preventDefault()
    depth.current = 0
    setOver(false)
    filesFromDrop(e.dataTransfer).then(p.onFiles, () => {})
  }

  const sum = uploadSummary(p.rows)
  return (
    <section className="card" data-testid="kb-upload">
      <h2>{t('knowledge.upload')}</h2>
      <div
        className={`kb-drop ${over ? 'over' : ''}`}
        data-testid="kb-drop"
        onDragEnter={(e) => {
          if (!carriesFiles(e)) return
          e.preventDefault()
          depth.current++
          setOver(true)
        }}
        onDragOver={(e) => {
          if (!carriesFiles(e)) return
          e.preventDefault()
          e.dataTransfer.dropEffect = 'copy'
        }}
        onDragLeave={(e) => {
          if (!carriesFiles(e)) return
          depth.current = Math.max(0, depth.current - 1)
          if (!depth.current) setOver(false)
        }}
        onDrop={onDrop}
      >
        <Icon name="attach" size={22} />
        <span>{t('knowledge.drop')}</span>
        <div className="kb-pickers">
          <button type="button" className="btn small" onClick={() => filesInput.current?.click()} data-testid="kb-pick-files">
            {t('knowledge.chooseFiles')}
          </button>
          <button type="button" className="btn small" onClick={() => folderInput.current?.click()} data-testid="kb-pick-folder">
            {t('knowledge.chooseFolder')}
          </button>
        </div>
        <span className="muted small">{t('knowledge.uploadHint')}</span>
        <input
          ref={filesInput}
          type="file"
          multiple
          hidden
          data-testid="kb-file-input"
          onChange={(e) => picked(e.currentTarget)}
        />
        <input
          ref={folderInput}
          type="file"
          multiple
          hidden
          data-testid="kb-folder-input"
          // React does not know the attribute; the DOM takes it as written.
          {...{ webkitdirectory: '' }}
          onChange={(e) => picked(e.currentTarget)}
        />
      </div>
      {p.rows.length > 0 && (
        <>
          <div className="form-bar kb-upload-bar">
            <span className="small" role="status" data-testid="kb-upload-summary">
              {t('knowledge.uploads', sum)}
            </span>
            <span className="spacer" />
            {sum.done + sum.failed > 0 && (
              <button type="button" className="btn ghost small" onClick={p.onClear} data-testid="kb-upload-clear">
                {t('knowledge.clearDone')}
              </button>
            )}
          </div>
          <ul className="kb-uploads" data-testid="kb-uploads">
            {p.rows.map((r) => (
              <UploadLine key={r.key} row={r} />
            ))}
          </ul>
        </>
      )}
    </section>
  )
}

function UploadLine({ row }: { row: UploadRow }) {
  const { t } = useI18n()
  const s = row.state
  let text: string
  switch (s.phase) {
    case 'waiting':
      text = t('knowledge.waiting')
      break
    case 'uploading':
      text = t('knowledge.uploading', { pct: s.pct })
      break
    case 'indexing':
      text = `${t('knowledge.indexing')} (${t(s.status === 'queued' ? 'knowledge.status.queued' : 'knowledge.status.processing')})`
      break
    case 'ready':
      text = s.duplicate ? `${t('knowledge.status.ready')} — ${t('knowledge.duplicate')}` : t('knowledge.status.ready')
      break
    case 'failed':
      text = t('knowledge.status.failed')
      break
  }
  return (
    <li className={`kb-upload ${s.phase}`} data-testid="kb-upload-row" data-path={row.path} data-phase={s.phase}>
      <span className="kb-upload-name" title={row.path}>
        {row.path}
      </span>
      <span className="muted small">{fmtBytes(row.bytes)}</span>
      <span className={`pill kb-status ${s.phase}`} data-testid="kb-upload-state">
        {(s.phase === 'uploading' || s.phase === 'indexing') && <span className="spinner" aria-hidden="true" />}
        {text}
      </span>
      {s.phase === 'uploading' && (
        <progress className="kb-progress" max={100} value={s.pct} aria-label={row.path} />
      )}
      {s.phase === 'failed' && (
        <span className="kb-upload-error small danger-text" data-testid="kb-upload-error">
          {s.error}
        </span>
      )}
      {s.phase === 'indexing' && (
        <>
          <IngestStage state={{ status: s.status, progress: s.progress }} testId="kb-upload-stage" />
          {s.note && (
            <span className="kb-upload-error small kb-retry" data-testid="kb-upload-retry">
              {errorNote({ status: s.status, error: s.note }, t)?.text}
            </span>
          )}
        </>
      )}
    </li>
  )
}
