const rs = await tools.kubernetes.api_resources({ namespaced: true })
return rs.filter(r => r.group !== '').map(r => `${r.kind} (${r.group})`).slice(0, 10)
