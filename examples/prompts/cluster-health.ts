const args = { namespace: '' }
// Cluster health of a namespace (all when empty): pods not running or not
// ready, crash-looping containers with the last line their crashed
// instance logged, workloads short of replicas, and warning events of the
// last hour. Only the findings come back.
const ns = args.namespace ? { namespace: args.namespace } : { allNamespaces: true }
const [pods, deployments, events] = await Promise.all([
  tools.kubernetes.pods.list(ns),
  tools.kubernetes.deployments.list(ns),
  tools.kubernetes.events.list({ ...ns, fieldSelector: 'type=Warning' }),
])
const notReady = pods
  .filter((p) => p.status?.phase !== 'Succeeded')
  .filter((p) => p.status?.phase !== 'Running' || (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status !== 'True'))
  .map((p) => `${p.metadata.namespace}/${p.metadata.name} ${p.status?.phase}`)
const crashing = await Promise.all(
  pods.flatMap((p) =>
    (p.status?.containerStatuses ?? [])
      .filter((c) => c.state?.waiting?.reason === 'CrashLoopBackOff')
      .map(async (c) => {
        let last = ''
        try {
          const log = await tools.kubernetes.pods.logs({ name: p.metadata.name, namespace: p.metadata.namespace, container: c.name, previous: true, tailLines: 5 })
          last = log.trim().split('\n').pop() ?? ''
        } catch (e: any) {
          last = `(no logs: ${e.message})`
        }
        return `${p.metadata.namespace}/${p.metadata.name} ${c.name}: ${c.restartCount} restarts, last ${c.lastState?.terminated?.reason ?? '?'}: ${last}`
      }),
  ),
)
const shortOfReplicas = deployments
  .filter((d) => (d.status?.readyReplicas ?? 0) < (d.spec?.replicas ?? 1))
  .map((d) => `${d.metadata.namespace}/${d.metadata.name} ${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? 1} ready`)
const hourAgo = Date.now() - 3600_000
const warnings = events
  .filter((e) => new Date(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? 0).getTime() > hourAgo)
  .map((e) => `${e.involvedObject.kind}/${e.involvedObject.name}: ${e.reason} (${e.count ?? 1}×)`)
return { pods: pods.length, notReady, crashing, shortOfReplicas, warnings: [...new Set(warnings)].slice(0, 20) }
