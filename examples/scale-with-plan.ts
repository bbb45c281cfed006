// Scale a deployment. Run it once: the answer ends with the plan (a dry
// run: replicas before → after) and its id. Once a person approved it (on
// the approval page or with kubecode approve ID), run it again with the id
// as approve to scale for real — exactly as planned, or not at all.
// On the demo, live/storefront has an autoscaler: the plan says first
// that it would set the replicas back, and what would last instead.
const NAMESPACE = 'live'
const DEPLOYMENT = 'storefront'
const REPLICAS = 5

const scale = await tools.kubernetes.deployments.scale({ namespace: NAMESPACE, name: DEPLOYMENT, replicas: REPLICAS })
return `${DEPLOYMENT}: ${scale.spec.replicas} replicas requested`
