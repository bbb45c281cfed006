// Helm drift audit: what changed in the cluster since release web was
// installed? Two ways, side by side:
// - built in: tools.helm.drift compares every object of the release with
//   what the release sets, through a server-side-apply dry run, so fields
//   the server defaults never show as drift; it also finds fields set
//   outside the release (an env var added by hand);
// - script only: the release's manifest next to the live objects, for the
//   fields this audit cares about (replicas, images, env, config keys).
// Only the drift comes back, never the manifests.
const NAMESPACE = 'helm-demo'
const RELEASE = 'web'

const drift = await tools.helm.drift({ release: RELEASE, namespace: NAMESPACE })
const builtIn = drift.rows.map((r) =>
  `${r.object} ${r.path ?? ''} ${r.change}` +
  (r.expected !== undefined ? ` expected ${JSON.stringify(r.expected)}` : '') +
  (r.actual !== undefined ? ` actual ${JSON.stringify(r.actual)}` : '') +
  (r.manager ? ` (by ${r.manager})` : ''))

const scriptOnly: string[] = []
// Manifest objects are of any kind: say which fields this audit reads.
type PodTemplate = { spec: { containers: { name: string; image: string; env?: { name: string }[] }[] } }
for (const obj of await tools.helm.get_manifest({ release: RELEASE, namespace: NAMESPACE })) {
  const name = obj.metadata.name
  if (obj.kind === 'Deployment') {
    const spec = obj.spec as { replicas?: number; template: PodTemplate }
    const live = await tools.kubernetes.deployments.get({ name, namespace: NAMESPACE })
    if (live.spec?.replicas !== spec.replicas) {
      scriptOnly.push(`Deployment/${name} replicas ${spec.replicas} → ${live.spec?.replicas}`)
    }
    for (const want of spec.template.spec.containers) {
      const got = live.spec?.template.spec?.containers.find((c) => c.name === want.name)
      if (!got) {
        scriptOnly.push(`Deployment/${name} container ${want.name} missing`)
        continue
      }
      if (got.image !== want.image) scriptOnly.push(`Deployment/${name} ${want.name} image ${want.image} → ${got.image}`)
      const names = new Set((want.env ?? []).map((e) => e.name))
      for (const e of got.env ?? []) {
        if (!names.has(e.name)) scriptOnly.push(`Deployment/${name} ${want.name} env ${e.name} added`)
      }
    }
  } else if (obj.kind === 'ConfigMap') {
    const live = await tools.kubernetes.configmaps.get({ name, namespace: NAMESPACE })
    for (const [key, value] of Object.entries(obj.data ?? {})) {
      if (live.data?.[key] === undefined) scriptOnly.push(`ConfigMap/${name} ${key} removed`)
      else if (live.data[key] !== value) scriptOnly.push(`ConfigMap/${name} ${key} changed`)
    }
  }
}

return {
  summary: `${drift.drifted} of ${drift.checked} objects of ${RELEASE} (revision ${drift.revision}) drifted`,
  builtIn,
  scriptOnly,
}
