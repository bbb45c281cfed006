const args = { namespace: '', pod: '' }
// Why is this pod not ready? Its phase and conditions, each container's
// state and last termination, the last lines of a failing container's
// logs, and the pod's recent events: the usual suspects in one answer.
const pod = await tools.kubernetes.pods.get({ namespace: args.namespace, name: args.pod })
const events = await tools.kubernetes.events.list({
  namespace: args.namespace,
  fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${args.pod}`,
})
const containers = await Promise.all(
  (pod.status?.containerStatuses ?? []).map(async (c) => {
    const state = c.state?.waiting
      ? `waiting: ${c.state.waiting.reason}${c.state.waiting.message ? ` (${c.state.waiting.message})` : ''}`
      : c.state?.terminated
        ? `terminated: ${c.state.terminated.reason} exit ${c.state.terminated.exitCode}`
        : 'running'
    let logs: string[] = []
    if (!c.ready) {
      try {
        const log = await tools.kubernetes.pods.logs({ namespace: args.namespace, name: args.pod, container: c.name, previous: c.restartCount > 0, tailLines: 5 })
        logs = log.trim().split('\n').filter((l) => l)
      } catch (e: any) {
        logs = [`(no logs: ${e.message})`]
      }
    }
    const last = c.lastState?.terminated
    return { name: c.name, ready: c.ready, restarts: c.restartCount, state, lastTermination: last ? `${last.reason} exit ${last.exitCode}` : undefined, logs }
  }),
)
return {
  pod: `${args.namespace}/${args.pod}`,
  phase: pod.status?.phase,
  node: pod.spec?.nodeName ?? '(not scheduled)',
  conditions: (pod.status?.conditions ?? []).filter((c) => c.status !== 'True').map((c) => `${c.type}: ${c.reason ?? c.status}${c.message ? ` (${c.message})` : ''}`),
  containers,
  events: events.slice(-8).map((e) => `${e.type} ${e.reason}: ${e.message}`),
}
