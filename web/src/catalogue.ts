// The models, fetched once per page load and shared by every chat view. Agents are
// not cached here: an admin can change them at any time, so each chat reads them.

import { api } from './api'
import type { Model } from './types'

let models: Promise<Model[]> | null = null
export function loadModels() {
  models ??= api.models()
  models.catch(() => {
    models = null
  })
  return models
}
