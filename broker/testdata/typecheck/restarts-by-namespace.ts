const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
const byNs: Record<string, number> = {}
for (const p of pods) {
  const n = (p.status?.containerStatuses ?? []).reduce((s, c) => s + c.restartCount, 0)
  if (n > 0) byNs[p.metadata.namespace ?? ''] = (byNs[p.metadata.namespace ?? ''] ?? 0) + n
}
return byNs
