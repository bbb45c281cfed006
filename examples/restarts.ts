// Which pods restarted? All namespaces, restarts > 0, and only name,
// namespace and restart count: a few tokens per pod instead of the whole
// pod object.
const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
return pods
  .map(p => ({
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    restarts: (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0),
  }))
  .filter(p => p.restarts > 0)
  .sort((a, b) => b.restarts - a.restarts || a.name.localeCompare(b.name))
