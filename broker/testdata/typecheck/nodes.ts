const nodes = await tools.kubernetes.nodes.list({})
return nodes.map(n => ({ name: n.metadata.name, ready: n.status?.conditions?.find(c => c.type === 'Ready')?.status === 'True' }))
