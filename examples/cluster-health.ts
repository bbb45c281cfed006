// Cluster health scan: every crash-looping container with the last line its
// previous (crashed) instance logged. One script instead of a dozen calls;
// only the summary comes back.
interface Crash {
  namespace: string
  pod: string
  container: string
  restarts: number
  reason: string
  lastLogLine: string
}

const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
const crashing = pods.flatMap(p =>
  (p.status?.containerStatuses ?? [])
    .filter(c => c.state?.waiting?.reason === 'CrashLoopBackOff')
    .map(c => ({ p, c })),
)

const out: Crash[] = await Promise.all(
  crashing.map(async ({ p, c }) => {
    let lastLogLine = ''
    try {
      const log = await tools.kubernetes.pods.logs({
        name: p.metadata.name,
        namespace: p.metadata.namespace,
        container: c.name,
        previous: true,
        tailLines: 20,
      })
      const lines = log.trim().split('\n')
      lastLogLine = lines[lines.length - 1] ?? ''
    } catch (e: any) {
      lastLogLine = `(logs unavailable: ${e.code} ${e.message})`
    }
    return {
      namespace: p.metadata.namespace,
      pod: p.metadata.name,
      container: c.name,
      restarts: c.restartCount,
      reason: c.lastState?.terminated?.reason ?? 'unknown',
      lastLogLine,
    }
  }),
)
return out.sort((a, b) => b.restarts - a.restarts)
