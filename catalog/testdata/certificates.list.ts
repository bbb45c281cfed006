declare const tools: {
  kubernetes: {
    certificates: {
      /** List certificates in a namespace or across all namespaces (cert-manager.io/v1). Returns a plain array; every page is fetched. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Certificate[]>;
    };
  };
};
interface Certificate { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: { secretName: string; issuerRef: { name: string; kind?: string; group?: string }; commonName?: string; dnsNames?: string[]; duration?: string; keystores?: { jks?: { create: boolean; passwordSecretRef?: { name?: string; key?: string } } }; privateKey?: { algorithm?: "RSA" | "ECDSA" | "Ed25519"; encoding?: "PKCS1" | "PKCS8"; rotationPolicy?: "Never" | "Always"; size?: number }; renewBefore?: string; secretTemplate?: { annotations?: Record<string, string>; labels?: Record<string, string> }; subject?: { countries?: string[]; localities?: string[]; organizations?: string[] }; usages?: string[] }; status?: { conditions?: { type: string; status: string; lastProbeTime?: string; lastTransitionTime?: string; message?: string; observedGeneration?: number; reason?: string }[]; failedIssuanceAttempts?: number; lastFailureTime?: string; nextPrivateKeySecretName?: string; notAfter?: string; notBefore?: string; renewalTime?: string; revision?: number }; "x-extra"?: unknown }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; finalizers?: string[]; generateName?: string; generation?: number; labels?: Record<string, string>; managedFields?: { manager?: string; operation?: string }[]; ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[]; resourceVersion?: string; uid?: string }
