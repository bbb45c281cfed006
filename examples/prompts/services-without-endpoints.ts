const args = { namespace: '' }
// Services of the namespace (all when empty) that select pods but have no
// ready endpoint: traffic to them goes nowhere.
const ns = args.namespace ? { namespace: args.namespace } : { allNamespaces: true }
const [services, slices] = await Promise.all([tools.kubernetes.services.list(ns), tools.kubernetes.endpointslices.list(ns)])
const served = new Set(
  slices
    .filter((s) => (s.endpoints ?? []).some((e) => e.conditions?.ready !== false))
    .map((s) => `${s.metadata.namespace}/${s.metadata.labels?.['kubernetes.io/service-name']}`),
)
return services
  .filter((s) => s.spec?.selector && Object.keys(s.spec.selector).length > 0 && s.spec.type !== 'ExternalName')
  .map((s) => `${s.metadata.namespace}/${s.metadata.name}`)
  .filter((key) => !served.has(key))
  .sort()
