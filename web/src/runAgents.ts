// The agent each run was started with, as this tab saw it, for the reply footer: a
// run does not say which agent answered (its DTO and events carry the model only),
// so runs started or attached elsewhere, or before a reload, show none. Kept for
// the page's lifetime, like the finished-run cache, so a first message's reply
// keeps it across the move from /chat to /chat/:id.

const agents = new Map<string, string>()

export function rememberRunAgent(runId: string, agentId: string | undefined | null): void {
  if (agentId && !agents.has(runId)) agents.set(runId, agentId)
}

export function runAgentOf(runId: string | null | undefined): string | undefined {
  return runId ? agents.get(runId) : undefined
}
