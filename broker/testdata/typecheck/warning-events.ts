const events = await tools.kubernetes.events.list({ allNamespaces: true, fieldSelector: 'type=Warning' })
return events.slice(0, 20).map(e => `${e.involvedObject.kind}/${e.involvedObject.name}: ${e.reason} ${e.message ?? ''}`)
