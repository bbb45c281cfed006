declare const tools: {
  kubernetes: {
    /** List the API resources the cluster serves (CRDs included) with kind, group, scope, short names and their kubecode operation names. */
    api_resources(input?: { group?: string; namespaced?: boolean }): Promise<APIResource[]>;
  };
};
interface APIResource { resource: string; version: string; kind: string; namespaced: boolean; verbs: string[]; operations: string[]; group?: string; shortNames?: string[] }
