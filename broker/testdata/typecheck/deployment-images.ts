const ds = await tools.kubernetes.deployments.list({ allNamespaces: true })
return ds.map(d => ({ ns: d.metadata.namespace, name: d.metadata.name, images: (d.spec.template.spec?.containers ?? []).map(c => c.image) }))
