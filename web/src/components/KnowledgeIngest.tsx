// What a document being ingested shows under its row — in the documents list and
// in an upload row still indexing: its stage ("Reading…", "Embedding 120 / 480
// chunks" with a bar). The wording is knowledge.ts' `progressLabel`.

import { useI18n } from '../i18n'
import { progressFraction, progressLabel, type IngestState } from '../knowledge'

export function IngestStage({ state, testId }: { state: IngestState; testId: string }) {
  const { t } = useI18n()
  const label = progressLabel(state, t)
  if (!label) return null
  const frac = progressFraction(state)
  return (
    <span className="kb-stage" data-testid={testId} data-stage={state.progress?.stage}>
      <span className="small muted">{label}</span>
      {frac !== null && <progress className="kb-progress" max={1} value={frac} aria-label={label} />}
    </span>
  )
}
