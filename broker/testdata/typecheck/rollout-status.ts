const st = await tools.kubernetes.deployments.rollout.status({ namespace: 'live', name: 'storefront' })
const hist = await tools.kubernetes.deployments.rollout.history({ namespace: 'live', name: 'storefront' })
return { done: st.done, message: st.message, revisions: hist.map(h => h.revision) }
