const svcs = await tools.kubernetes.services.list({ namespace: 'shop' })
return svcs.map(s => ({ name: s.metadata.name, selector: s.spec?.selector ?? {}, type: s.spec?.type }))
