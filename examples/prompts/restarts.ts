const args = { namespace: '' }
// Which pods restarted? Name, namespace and restart count of every pod of
// the namespace (all when empty) that restarted, most first: a few tokens
// per pod instead of the whole object.
const pods = await tools.kubernetes.pods.list(args.namespace ? { namespace: args.namespace } : { allNamespaces: true })
return pods
  .map((p) => ({
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    restarts: (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0),
  }))
  .filter((p) => p.restarts > 0)
  .sort((a, b) => b.restarts - a.restarts || a.name.localeCompare(b.name))
