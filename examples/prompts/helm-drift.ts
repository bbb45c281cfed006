const args = { release: '', namespace: '' }
// What changed in the cluster since the release was installed or last
// upgraded: every field whose live value differs from what the release
// sets, and fields someone else added, with who changed it. Only the
// drift comes back, never the manifests.
const drift = await tools.helm.drift({ release: args.release, namespace: args.namespace || undefined })
return {
  summary: `${drift.drifted} of ${drift.checked} objects of ${drift.release} (revision ${drift.revision}) drifted`,
  rows: drift.rows.map(
    (r) =>
      `${r.object} ${r.path ?? ''} ${r.change}` +
      (r.expected !== undefined ? ` expected ${JSON.stringify(r.expected)}` : '') +
      (r.actual !== undefined ? ` actual ${JSON.stringify(r.actual)}` : '') +
      (r.manager ? ` (by ${r.manager})` : ''),
  ),
}
