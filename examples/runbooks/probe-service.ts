/**
 * Fetches a Service's URL from inside a pod (wget), to see whether it answers.
 * @param {string} namespace  the pod's namespace
 * @param {string} pod  the pod to run wget in
 * @param {string} url  what to fetch
 */
const r = await tools.kubernetes.pods.exec({ namespace: params.namespace, name: params.pod, command: ['wget', '-qO-', '-T', '3', params.url] })
return { exitCode: r.exitCode, answered: r.exitCode === 0, head: r.stdout.slice(0, 80) }
