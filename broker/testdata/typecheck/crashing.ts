const pods = await tools.kubernetes.pods.list({ namespace: 'payments' })
const bad = pods.filter(p => p.status?.containerStatuses?.some(c => c.state?.waiting?.reason === 'CrashLoopBackOff'))
return await Promise.all(bad.map(async p => {
  const c = p.status!.containerStatuses!.find(c => c.state?.waiting?.reason === 'CrashLoopBackOff')!
  const log = await tools.kubernetes.pods.logs({ namespace: 'payments', name: p.metadata.name, container: c.name, previous: true, tailLines: 1 })
  return { pod: p.metadata.name, restarts: c.restartCount, last: log.trim() }
}))
