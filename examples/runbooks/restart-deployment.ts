/**
 * Restarts a Deployment's pods (a rolling restart).
 * @param {string} namespace  the Deployment's namespace
 * @param {string} name  the Deployment
 */
await tools.kubernetes.deployments.rollout.restart({ namespace: params.namespace, name: params.name })
return 'restarted ' + params.namespace + '/' + params.name
