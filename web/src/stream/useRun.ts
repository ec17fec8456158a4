// React binding: one run's state, fed by one RunAttachment.
//
// The attachment replays the run's events from the first, which include any
// `approval_required`, `question` and `plan_proposed`. The session's pending
// approvals, open questions and open plans are read once as well, so a run still
// waiting shows its buttons even when its event log did not survive (an embedded
// server restarted, a flushed Redis); the reducer ignores what the events already
// told.

import { useEffect, useReducer } from 'react'
import { api } from '../api'
import { RunAttachment } from './attach'
import { initialRunState, reduceRun, type RunState } from './reducer'

export function useRun(runId: string, onGone: () => void, sessionId?: string): RunState {
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

  useEffect(() => {
    if (!sessionId) return
    let live = true
    api
      .listApprovals(sessionId)
      .then((approvals) => {
        if (live && approvals.length) dispatch({ kind: 'approvals', approvals })
      })
      .catch(() => {
        // The events are the main source; this list only fills a lost log's gap.
      })
    api
      .listQuestions(sessionId)
      .then((questions) => {
        if (live && questions.length) dispatch({ kind: 'questions', questions })
      })
      .catch(() => {})
    api
      .listPlans(sessionId)
      .then((plans) => {
        if (live && plans.length) dispatch({ kind: 'plans', plans })
      })
      .catch(() => {})
    return () => {
      live = false
    }
  }, [runId, sessionId])

  return state
}
