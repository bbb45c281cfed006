// Roll out a new image and verify it: patch one container's image (a
// narrow patch: one field), then poll rollout.status until the rollout is
// done, failed, or the deadline passes, and answer in one line.
//
// In plan mode (the default) the patch is a dry run: the script sees the
// deployment unchanged and says so; approving the plan runs it for real.
const NAMESPACE = 'live'
const DEPLOYMENT = 'storefront'
const IMAGE = 'registry.example.com/live/storefront:1.5.0'
const DEADLINE_MS = 60_000

const before = await tools.kubernetes.deployments.get({ namespace: NAMESPACE, name: DEPLOYMENT })
const container = before.spec.template.spec?.containers[0].name ?? ''
await tools.kubernetes.deployments.patch({
  namespace: NAMESPACE,
  name: DEPLOYMENT,
  patch: { spec: { template: { spec: { containers: [{ name: container, image: IMAGE }] } } } },
})
const now = await tools.kubernetes.deployments.get({ namespace: NAMESPACE, name: DEPLOYMENT })
if (now.spec.template.spec?.containers[0].image !== IMAGE) {
  return `planned: ${DEPLOYMENT} ${container} → ${IMAGE} (not applied yet)`
}
const start = Date.now()
for (;;) {
  const st = await tools.kubernetes.deployments.rollout.status({ namespace: NAMESPACE, name: DEPLOYMENT })
  const waited = ((Date.now() - start) / 1000).toFixed(1)
  if (st.done) return `rolled out: ${DEPLOYMENT} runs ${IMAGE} on ${st.available}/${st.desired} replicas after ${waited}s`
  if (st.failed) return `failed: ${st.message}`
  if (Date.now() - start > DEADLINE_MS) return `not done after ${waited}s: ${st.message}`
  await sleep(250)
}
