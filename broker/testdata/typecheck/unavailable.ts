const ds = await tools.kubernetes.deployments.list({ allNamespaces: true })
return ds.filter(d => (d.status?.availableReplicas ?? 0) < (d.spec.replicas ?? 1)).map(d => `${d.metadata.namespace}/${d.metadata.name}`)
