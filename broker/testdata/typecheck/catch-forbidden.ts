try {
  await tools.kubernetes.pods.get({ namespace: 'shop', name: 'does-not-exist' })
  return 'found'
} catch (e: any) {
  return `${e.code} ${e.reason}`
}
