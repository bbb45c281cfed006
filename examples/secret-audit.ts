// Which workloads reference Secrets that do not exist? Every pod template
// (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs) and bare Pods,
// by env, envFrom, volumes and imagePullSecrets. Secret values are never
// read: only names are compared.
const [secrets, deployments, statefulsets, daemonsets, jobs, cronjobs, pods] = await Promise.all([
  tools.kubernetes.secrets.list({ allNamespaces: true }),
  tools.kubernetes.deployments.list({ allNamespaces: true }),
  tools.kubernetes.statefulsets.list({ allNamespaces: true }),
  tools.kubernetes.daemonsets.list({ allNamespaces: true }),
  tools.kubernetes.jobs.list({ allNamespaces: true }),
  tools.kubernetes.cronjobs.list({ allNamespaces: true }),
  tools.kubernetes.pods.list({ allNamespaces: true }),
])
const exists = new Set(secrets.map(s => `${s.metadata.namespace}/${s.metadata.name}`))

type Ref = { secret: string; via: string }
function refs(spec: any): Ref[] {
  const out: Ref[] = []
  for (const c of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]) {
    for (const e of c.env ?? []) {
      const r = e.valueFrom?.secretKeyRef
      if (r?.name && !r.optional) out.push({ secret: r.name, via: `env ${c.name}.${e.name}` })
    }
    for (const f of c.envFrom ?? []) {
      if (f.secretRef?.name && !f.secretRef.optional) out.push({ secret: f.secretRef.name, via: `envFrom ${c.name}` })
    }
  }
  for (const v of spec?.volumes ?? []) {
    if (v.secret?.secretName && !v.secret.optional) out.push({ secret: v.secret.secretName, via: `volume ${v.name}` })
  }
  for (const p of spec?.imagePullSecrets ?? []) {
    if (p.name) out.push({ secret: p.name, via: 'imagePullSecrets' })
  }
  return out
}

const workloads: { kind: string; namespace: string; name: string; spec: any }[] = [
  ...deployments.map(d => ({ kind: 'Deployment', namespace: d.metadata.namespace!, name: d.metadata.name, spec: d.spec.template.spec })),
  ...statefulsets.map(s => ({ kind: 'StatefulSet', namespace: s.metadata.namespace!, name: s.metadata.name, spec: s.spec?.template.spec })),
  ...daemonsets.map(d => ({ kind: 'DaemonSet', namespace: d.metadata.namespace!, name: d.metadata.name, spec: d.spec?.template.spec })),
  ...jobs.filter(j => !j.metadata.ownerReferences?.length).map(j => ({ kind: 'Job', namespace: j.metadata.namespace!, name: j.metadata.name, spec: j.spec?.template.spec })),
  ...cronjobs.map(c => ({ kind: 'CronJob', namespace: c.metadata.namespace!, name: c.metadata.name, spec: c.spec?.jobTemplate.spec?.template.spec })),
  ...pods.filter(p => !p.metadata.ownerReferences?.length).map(p => ({ kind: 'Pod', namespace: p.metadata.namespace!, name: p.metadata.name, spec: p.spec })),
]
return workloads
  .flatMap(w => refs(w.spec)
    .filter(r => !exists.has(`${w.namespace}/${r.secret}`))
    .map(r => ({ namespace: w.namespace, kind: w.kind, name: w.name, secret: r.secret, via: r.via })))
  .sort((a, b) => `${a.namespace}/${a.kind}/${a.name}/${a.via}`.localeCompare(`${b.namespace}/${b.kind}/${b.name}/${b.via}`))
