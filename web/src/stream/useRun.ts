// React binding: one run's state, fed by one RunAttachment.

import { useEffect, useReducer } from 'react'
import { api } from '../api'
import { RunAttachment } from './attach'
import { initialRunState, reduceRun, type RunState } from './reducer'

export function useRun(runId: string, onGone: () => void): RunState {
  const [state, dispatch] = useReducer(reduceRun, runId, initialRunState)

  useEffect(() => {
    const att = new RunAttachment({
      runId,
      after: 0,
      onEvent: (event) => dispatch({ kind: 'event', event }),
      onConnection: (s) => dispatch({ kind: 'connection', state: s }),
      onGone,
      getRun: api.getRun,
    })
    return () => att.close()
    // onGone is read once per attachment on purpose
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [runId])

  return state
}
