// Services that select pods but have no ready endpoint: traffic to them goes
// nowhere. Joins services with EndpointSlices in the sandbox.
const [services, slices] = await Promise.all([
  tools.kubernetes.services.list({ allNamespaces: true }),
  tools.kubernetes.endpointslices.list({ allNamespaces: true }),
])
const served = new Set(
  slices
    .filter(s => (s.endpoints ?? []).some(e => e.conditions?.ready !== false))
    .map(s => `${s.metadata.namespace}/${s.metadata.labels?.['kubernetes.io/service-name']}`),
)
return services
  .filter(s => s.spec?.selector && Object.keys(s.spec.selector).length > 0 && s.spec.type !== 'ExternalName')
  .map(s => `${s.metadata.namespace}/${s.metadata.name}`)
  .filter(key => !served.has(key))
  .sort()
