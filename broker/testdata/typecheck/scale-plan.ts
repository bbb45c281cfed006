const d = await tools.kubernetes.deployments.get({ namespace: 'live', name: 'storefront' })
const s = await tools.kubernetes.deployments.scale({ namespace: 'live', name: 'storefront', replicas: (d.spec.replicas ?? 1) + 1 })
return s.spec.replicas
