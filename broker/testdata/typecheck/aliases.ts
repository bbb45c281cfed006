const a = await tools.kubernetes.po.list({ namespace: 'shop' })
const b = await tools.Kubernetes.Pods.List({ namespace: 'shop' })
const c = await tools.kubernetes.deploy.list({ namespace: 'shop' })
return [a.length === b.length, c.length >= 0]
