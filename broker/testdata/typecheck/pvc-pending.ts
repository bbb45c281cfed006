const pvcs = await tools.kubernetes.persistentvolumeclaims.list({ allNamespaces: true })
return pvcs.filter(p => p.status?.phase !== 'Bound').map(p => p.metadata.name)
