// Models and modes, fetched once per page load and shared by every chat view.

import { api } from './api'
import type { Mode, Model } from './types'

let catalogue: Promise<{ models: Model[]; modes: Mode[] }> | null = null
export function loadCatalogue() {
  catalogue ??= Promise.all([api.models(), api.modes().catch(() => [] as Mode[])]).then(([models, modes]) => ({
    models,
    modes,
  }))
  catalogue.catch(() => {
    catalogue = null
  })
  return catalogue
}
