declare const tools: {
  kubernetes: {
    pods: {
      /** List pods in a namespace or across all namespaces (core/v1). Returns a plain array; every page is fetched. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Pod[]>;
      /** Get one pod by name (core/v1, namespaced). */
      get(input: { name: string; namespace?: string }): Promise<Pod>;
    };
    deployments: {
      /** Get one deployment by name (apps/v1, namespaced). */
      get(input: { name: string; namespace?: string }): Promise<Deployment>;
    };
    certificates: {
      /** List certificates in a namespace or across all namespaces (cert-manager.io/v1). Returns a plain array; every page is fetched. */
      list(input?: { namespace?: string; allNamespaces?: boolean; fieldSelector?: string; labelSelector?: string; limit?: number }): Promise<Certificate[]>;
    };
    widgets_example_com: {
      /** Delete * / one widget. */
      delete(input: { name: string; mode?: "a" | "b\"c" | 3; "my-field"?: number }): Promise<unknown>;
    };
    things: {
      get(input?: { [k: string]: unknown }): Promise<(number | string)[]>;
    };
    maps: {
      get(input?: { [k: string]: unknown }): Promise<T3dMap>;
    };
    events_events_k8s_io: {
      list(): Promise<Event[]>;
    };
    events: {
      list(): Promise<EventCore[]>;
    };
  };
  helm: {
    releases: {
      list(): Promise<unknown>;
    };
  };
};
interface PodSpecContainersEnvValueFromConfigMapKeyRef { key: string; name?: string }
interface PodSpecContainersEnvValueFromSecretKeyRef { key: string; name?: string }
interface PodSpecContainersEnvValueFrom { configMapKeyRef?: PodSpecContainersEnvValueFromConfigMapKeyRef; secretKeyRef?: PodSpecContainersEnvValueFromSecretKeyRef }
interface PodSpecContainersEnv { name: string; value?: string; valueFrom?: PodSpecContainersEnvValueFrom }
interface PodSpecContainersLivenessProbeExec { command?: string[] }
interface PodSpecContainersLivenessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface PodSpecContainersLivenessProbe { exec?: PodSpecContainersLivenessProbeExec; failureThreshold?: number; httpGet?: PodSpecContainersLivenessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface PodSpecContainersPorts { containerPort: number; name?: string; hostPort?: number; protocol?: "TCP" | "UDP" | "SCTP" }
interface PodSpecContainersReadinessProbeExec { command?: string[] }
interface PodSpecContainersReadinessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface PodSpecContainersReadinessProbe { exec?: PodSpecContainersReadinessProbeExec; failureThreshold?: number; httpGet?: PodSpecContainersReadinessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface PodSpecContainersResources { limits?: Record<string, number | string>; requests?: Record<string, number | string> }
interface PodSpecContainersSecurityContext { privileged?: boolean; readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; runAsUser?: number }
interface PodSpecContainersStartupProbeExec { command?: string[] }
interface PodSpecContainersStartupProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface PodSpecContainersStartupProbe { exec?: PodSpecContainersStartupProbeExec; failureThreshold?: number; httpGet?: PodSpecContainersStartupProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface PodSpecContainersVolumeMounts { name: string; mountPath: string; readOnly?: boolean; subPath?: string }
interface PodSpecContainers { name: string; args?: string[]; command?: string[]; env?: PodSpecContainersEnv[]; image?: string; imagePullPolicy?: "Always" | "IfNotPresent" | "Never"; livenessProbe?: PodSpecContainersLivenessProbe; ports?: PodSpecContainersPorts[]; readinessProbe?: PodSpecContainersReadinessProbe; resources?: PodSpecContainersResources; securityContext?: PodSpecContainersSecurityContext; startupProbe?: PodSpecContainersStartupProbe; stdin?: boolean; terminationMessagePath?: string; tty?: boolean; volumeMounts?: PodSpecContainersVolumeMounts[]; workingDir?: string }
interface PodSpecAffinity { nodeAffinity?: { [k: string]: unknown }; podAffinity?: { [k: string]: unknown }; podAntiAffinity?: { [k: string]: unknown } }
interface PodSpecInitContainersEnvValueFromConfigMapKeyRef { key: string; name?: string }
interface PodSpecInitContainersEnvValueFromSecretKeyRef { key: string; name?: string }
interface PodSpecInitContainersEnvValueFrom { configMapKeyRef?: PodSpecInitContainersEnvValueFromConfigMapKeyRef; secretKeyRef?: PodSpecInitContainersEnvValueFromSecretKeyRef }
interface PodSpecInitContainersEnv { name: string; value?: string; valueFrom?: PodSpecInitContainersEnvValueFrom }
interface PodSpecInitContainersLivenessProbeExec { command?: string[] }
interface PodSpecInitContainersLivenessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface PodSpecInitContainersLivenessProbe { exec?: PodSpecInitContainersLivenessProbeExec; failureThreshold?: number; httpGet?: PodSpecInitContainersLivenessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface PodSpecInitContainersPorts { containerPort: number; name?: string; hostPort?: number; protocol?: "TCP" | "UDP" | "SCTP" }
interface PodSpecInitContainersReadinessProbeExec { command?: string[] }
interface PodSpecInitContainersReadinessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface PodSpecInitContainersReadinessProbe { exec?: PodSpecInitContainersReadinessProbeExec; failureThreshold?: number; httpGet?: PodSpecInitContainersReadinessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface PodSpecInitContainersResources { limits?: Record<string, number | string>; requests?: Record<string, number | string> }
interface PodSpecInitContainersSecurityContext { privileged?: boolean; readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; runAsUser?: number }
interface PodSpecInitContainersStartupProbeExec { command?: string[] }
interface PodSpecInitContainersStartupProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface PodSpecInitContainersStartupProbe { exec?: PodSpecInitContainersStartupProbeExec; failureThreshold?: number; httpGet?: PodSpecInitContainersStartupProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface PodSpecInitContainersVolumeMounts { name: string; mountPath: string; readOnly?: boolean; subPath?: string }
interface PodSpecInitContainers { name: string; args?: string[]; command?: string[]; env?: PodSpecInitContainersEnv[]; image?: string; imagePullPolicy?: "Always" | "IfNotPresent" | "Never"; livenessProbe?: PodSpecInitContainersLivenessProbe; ports?: PodSpecInitContainersPorts[]; readinessProbe?: PodSpecInitContainersReadinessProbe; resources?: PodSpecInitContainersResources; securityContext?: PodSpecInitContainersSecurityContext; startupProbe?: PodSpecInitContainersStartupProbe; stdin?: boolean; terminationMessagePath?: string; tty?: boolean; volumeMounts?: PodSpecInitContainersVolumeMounts[]; workingDir?: string }
interface PodSpecTolerations { effect?: string; key?: string; operator?: string; tolerationSeconds?: number; value?: string }
interface PodSpecVolumesConfigMap { name?: string; defaultMode?: number }
interface PodSpecVolumesEmptyDir { medium?: string; sizeLimit?: number | string }
interface PodSpecVolumesPersistentVolumeClaim { claimName: string; readOnly?: boolean }
interface PodSpecVolumesSecret { defaultMode?: number; secretName?: string }
interface PodSpecVolumes { name: string; configMap?: PodSpecVolumesConfigMap; emptyDir?: PodSpecVolumesEmptyDir; persistentVolumeClaim?: PodSpecVolumesPersistentVolumeClaim; secret?: PodSpecVolumesSecret }
interface PodSpec { containers: PodSpecContainers[]; affinity?: PodSpecAffinity; dnsPolicy?: string; enableServiceLinks?: boolean; hostNetwork?: boolean; hostname?: string; initContainers?: PodSpecInitContainers[]; nodeName?: string; nodeSelector?: Record<string, string>; priorityClassName?: string; restartPolicy?: "Always" | "OnFailure" | "Never"; schedulerName?: string; serviceAccountName?: string; subdomain?: string; terminationGracePeriodSeconds?: number; tolerations?: PodSpecTolerations[]; volumes?: PodSpecVolumes[] }
interface PodStatusConditions { type: string; status: string; lastProbeTime?: string; lastTransitionTime?: string; message?: string; observedGeneration?: number; reason?: string }
interface PodStatusContainerStatusesLastStateRunning { startedAt?: string }
interface PodStatusContainerStatusesLastStateTerminated { exitCode: number; containerID?: string; finishedAt?: string; message?: string; reason?: string; signal?: number; startedAt?: string }
interface PodStatusContainerStatusesLastStateWaiting { message?: string; reason?: string }
interface PodStatusContainerStatusesLastState { running?: PodStatusContainerStatusesLastStateRunning; terminated?: PodStatusContainerStatusesLastStateTerminated; waiting?: PodStatusContainerStatusesLastStateWaiting }
interface PodStatusContainerStatusesStateRunning { startedAt?: string }
interface PodStatusContainerStatusesStateTerminated { exitCode: number; containerID?: string; finishedAt?: string; message?: string; reason?: string; signal?: number; startedAt?: string }
interface PodStatusContainerStatusesStateWaiting { message?: string; reason?: string }
interface PodStatusContainerStatusesState { running?: PodStatusContainerStatusesStateRunning; terminated?: PodStatusContainerStatusesStateTerminated; waiting?: PodStatusContainerStatusesStateWaiting }
interface PodStatusContainerStatuses { name: string; ready: boolean; restartCount: number; image: string; imageID: string; containerID?: string; lastState?: PodStatusContainerStatusesLastState; started?: boolean; state?: PodStatusContainerStatusesState }
interface PodStatusInitContainerStatusesStateRunning { startedAt?: string }
interface PodStatusInitContainerStatusesStateTerminated { exitCode: number; containerID?: string; finishedAt?: string; message?: string; reason?: string; signal?: number; startedAt?: string }
interface PodStatusInitContainerStatusesStateWaiting { message?: string; reason?: string }
interface PodStatusInitContainerStatusesState { running?: PodStatusInitContainerStatusesStateRunning; terminated?: PodStatusInitContainerStatusesStateTerminated; waiting?: PodStatusInitContainerStatusesStateWaiting }
interface PodStatusInitContainerStatuses { name: string; ready: boolean; restartCount: number; state?: PodStatusInitContainerStatusesState }
interface PodStatusPodIPs { ip?: string }
interface PodStatus { conditions?: PodStatusConditions[]; containerStatuses?: PodStatusContainerStatuses[]; hostIP?: string; initContainerStatuses?: PodStatusInitContainerStatuses[]; message?: string; nominatedNodeName?: string; phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown"; podIP?: string; podIPs?: PodStatusPodIPs[]; qosClass?: string; reason?: string; startTime?: string }
interface Pod { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: PodSpec; status?: PodStatus }
interface DeploymentSpecSelectorMatchExpressions { key: string; operator: string; values?: string[] }
interface DeploymentSpecSelector { matchExpressions?: DeploymentSpecSelectorMatchExpressions[]; matchLabels?: Record<string, string> }
interface DeploymentSpecTemplateSpecContainersEnvValueFromConfigMapKeyRef { key: string; name?: string }
interface DeploymentSpecTemplateSpecContainersEnvValueFromSecretKeyRef { key: string; name?: string }
interface DeploymentSpecTemplateSpecContainersEnvValueFrom { configMapKeyRef?: DeploymentSpecTemplateSpecContainersEnvValueFromConfigMapKeyRef; secretKeyRef?: DeploymentSpecTemplateSpecContainersEnvValueFromSecretKeyRef }
interface DeploymentSpecTemplateSpecContainersEnv { name: string; value?: string; valueFrom?: DeploymentSpecTemplateSpecContainersEnvValueFrom }
interface DeploymentSpecTemplateSpecContainersLivenessProbeExec { command?: string[] }
interface DeploymentSpecTemplateSpecContainersLivenessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface DeploymentSpecTemplateSpecContainersLivenessProbe { exec?: DeploymentSpecTemplateSpecContainersLivenessProbeExec; failureThreshold?: number; httpGet?: DeploymentSpecTemplateSpecContainersLivenessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface DeploymentSpecTemplateSpecContainersPorts { containerPort: number; name?: string; hostPort?: number; protocol?: "TCP" | "UDP" | "SCTP" }
interface DeploymentSpecTemplateSpecContainersReadinessProbeExec { command?: string[] }
interface DeploymentSpecTemplateSpecContainersReadinessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface DeploymentSpecTemplateSpecContainersReadinessProbe { exec?: DeploymentSpecTemplateSpecContainersReadinessProbeExec; failureThreshold?: number; httpGet?: DeploymentSpecTemplateSpecContainersReadinessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface DeploymentSpecTemplateSpecContainersResources { limits?: Record<string, number | string>; requests?: Record<string, number | string> }
interface DeploymentSpecTemplateSpecContainersSecurityContext { privileged?: boolean; readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; runAsUser?: number }
interface DeploymentSpecTemplateSpecContainersStartupProbeExec { command?: string[] }
interface DeploymentSpecTemplateSpecContainersStartupProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface DeploymentSpecTemplateSpecContainersStartupProbe { exec?: DeploymentSpecTemplateSpecContainersStartupProbeExec; failureThreshold?: number; httpGet?: DeploymentSpecTemplateSpecContainersStartupProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface DeploymentSpecTemplateSpecContainersVolumeMounts { name: string; mountPath: string; readOnly?: boolean; subPath?: string }
interface DeploymentSpecTemplateSpecContainers { name: string; args?: string[]; command?: string[]; env?: DeploymentSpecTemplateSpecContainersEnv[]; image?: string; imagePullPolicy?: "Always" | "IfNotPresent" | "Never"; livenessProbe?: DeploymentSpecTemplateSpecContainersLivenessProbe; ports?: DeploymentSpecTemplateSpecContainersPorts[]; readinessProbe?: DeploymentSpecTemplateSpecContainersReadinessProbe; resources?: DeploymentSpecTemplateSpecContainersResources; securityContext?: DeploymentSpecTemplateSpecContainersSecurityContext; startupProbe?: DeploymentSpecTemplateSpecContainersStartupProbe; stdin?: boolean; terminationMessagePath?: string; tty?: boolean; volumeMounts?: DeploymentSpecTemplateSpecContainersVolumeMounts[]; workingDir?: string }
interface DeploymentSpecTemplateSpecAffinity { nodeAffinity?: { [k: string]: unknown }; podAffinity?: { [k: string]: unknown }; podAntiAffinity?: { [k: string]: unknown } }
interface DeploymentSpecTemplateSpecInitContainersEnvValueFromConfigMapKeyRef { key: string; name?: string }
interface DeploymentSpecTemplateSpecInitContainersEnvValueFromSecretKeyRef { key: string; name?: string }
interface DeploymentSpecTemplateSpecInitContainersEnvValueFrom { configMapKeyRef?: DeploymentSpecTemplateSpecInitContainersEnvValueFromConfigMapKeyRef; secretKeyRef?: DeploymentSpecTemplateSpecInitContainersEnvValueFromSecretKeyRef }
interface DeploymentSpecTemplateSpecInitContainersEnv { name: string; value?: string; valueFrom?: DeploymentSpecTemplateSpecInitContainersEnvValueFrom }
interface DeploymentSpecTemplateSpecInitContainersLivenessProbeExec { command?: string[] }
interface DeploymentSpecTemplateSpecInitContainersLivenessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface DeploymentSpecTemplateSpecInitContainersLivenessProbe { exec?: DeploymentSpecTemplateSpecInitContainersLivenessProbeExec; failureThreshold?: number; httpGet?: DeploymentSpecTemplateSpecInitContainersLivenessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface DeploymentSpecTemplateSpecInitContainersPorts { containerPort: number; name?: string; hostPort?: number; protocol?: "TCP" | "UDP" | "SCTP" }
interface DeploymentSpecTemplateSpecInitContainersReadinessProbeExec { command?: string[] }
interface DeploymentSpecTemplateSpecInitContainersReadinessProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface DeploymentSpecTemplateSpecInitContainersReadinessProbe { exec?: DeploymentSpecTemplateSpecInitContainersReadinessProbeExec; failureThreshold?: number; httpGet?: DeploymentSpecTemplateSpecInitContainersReadinessProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface DeploymentSpecTemplateSpecInitContainersResources { limits?: Record<string, number | string>; requests?: Record<string, number | string> }
interface DeploymentSpecTemplateSpecInitContainersSecurityContext { privileged?: boolean; readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; runAsUser?: number }
interface DeploymentSpecTemplateSpecInitContainersStartupProbeExec { command?: string[] }
interface DeploymentSpecTemplateSpecInitContainersStartupProbeHttpGet { port: number | string; path?: string; scheme?: string }
interface DeploymentSpecTemplateSpecInitContainersStartupProbe { exec?: DeploymentSpecTemplateSpecInitContainersStartupProbeExec; failureThreshold?: number; httpGet?: DeploymentSpecTemplateSpecInitContainersStartupProbeHttpGet; initialDelaySeconds?: number; periodSeconds?: number; timeoutSeconds?: number }
interface DeploymentSpecTemplateSpecInitContainersVolumeMounts { name: string; mountPath: string; readOnly?: boolean; subPath?: string }
interface DeploymentSpecTemplateSpecInitContainers { name: string; args?: string[]; command?: string[]; env?: DeploymentSpecTemplateSpecInitContainersEnv[]; image?: string; imagePullPolicy?: "Always" | "IfNotPresent" | "Never"; livenessProbe?: DeploymentSpecTemplateSpecInitContainersLivenessProbe; ports?: DeploymentSpecTemplateSpecInitContainersPorts[]; readinessProbe?: DeploymentSpecTemplateSpecInitContainersReadinessProbe; resources?: DeploymentSpecTemplateSpecInitContainersResources; securityContext?: DeploymentSpecTemplateSpecInitContainersSecurityContext; startupProbe?: DeploymentSpecTemplateSpecInitContainersStartupProbe; stdin?: boolean; terminationMessagePath?: string; tty?: boolean; volumeMounts?: DeploymentSpecTemplateSpecInitContainersVolumeMounts[]; workingDir?: string }
interface DeploymentSpecTemplateSpecTolerations { effect?: string; key?: string; operator?: string; tolerationSeconds?: number; value?: string }
interface DeploymentSpecTemplateSpecVolumesConfigMap { name?: string; defaultMode?: number }
interface DeploymentSpecTemplateSpecVolumesEmptyDir { medium?: string; sizeLimit?: number | string }
interface DeploymentSpecTemplateSpecVolumesPersistentVolumeClaim { claimName: string; readOnly?: boolean }
interface DeploymentSpecTemplateSpecVolumesSecret { defaultMode?: number; secretName?: string }
interface DeploymentSpecTemplateSpecVolumes { name: string; configMap?: DeploymentSpecTemplateSpecVolumesConfigMap; emptyDir?: DeploymentSpecTemplateSpecVolumesEmptyDir; persistentVolumeClaim?: DeploymentSpecTemplateSpecVolumesPersistentVolumeClaim; secret?: DeploymentSpecTemplateSpecVolumesSecret }
interface DeploymentSpecTemplateSpec { containers: DeploymentSpecTemplateSpecContainers[]; affinity?: DeploymentSpecTemplateSpecAffinity; dnsPolicy?: string; enableServiceLinks?: boolean; hostNetwork?: boolean; hostname?: string; initContainers?: DeploymentSpecTemplateSpecInitContainers[]; nodeName?: string; nodeSelector?: Record<string, string>; priorityClassName?: string; restartPolicy?: "Always" | "OnFailure" | "Never"; schedulerName?: string; serviceAccountName?: string; subdomain?: string; terminationGracePeriodSeconds?: number; tolerations?: DeploymentSpecTemplateSpecTolerations[]; volumes?: DeploymentSpecTemplateSpecVolumes[] }
interface DeploymentSpecTemplate { metadata?: ObjectMeta; spec?: DeploymentSpecTemplateSpec }
interface DeploymentSpecStrategyRollingUpdate { maxSurge?: number | string; maxUnavailable?: number | string }
interface DeploymentSpecStrategy { type?: "Recreate" | "RollingUpdate"; rollingUpdate?: DeploymentSpecStrategyRollingUpdate }
interface DeploymentSpec { selector: DeploymentSpecSelector; template: DeploymentSpecTemplate; minReadySeconds?: number; paused?: boolean; progressDeadlineSeconds?: number; replicas?: number; revisionHistoryLimit?: number; strategy?: DeploymentSpecStrategy }
interface DeploymentStatusConditions { type: string; status: string; lastProbeTime?: string; lastTransitionTime?: string; message?: string; observedGeneration?: number; reason?: string }
interface DeploymentStatus { availableReplicas?: number; collisionCount?: number; conditions?: DeploymentStatusConditions[]; observedGeneration?: number; readyReplicas?: number; replicas?: number; unavailableReplicas?: number; updatedReplicas?: number }
interface Deployment { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: DeploymentSpec; status?: DeploymentStatus }
interface CertificateSpecIssuerRef { name: string; kind?: string; group?: string }
interface CertificateSpecKeystoresJksPasswordSecretRef { name?: string; key?: string }
interface CertificateSpecKeystoresJks { create: boolean; passwordSecretRef?: CertificateSpecKeystoresJksPasswordSecretRef }
interface CertificateSpecKeystores { jks?: CertificateSpecKeystoresJks }
interface CertificateSpecPrivateKey { algorithm?: "RSA" | "ECDSA" | "Ed25519"; encoding?: "PKCS1" | "PKCS8"; rotationPolicy?: "Never" | "Always"; size?: number }
interface CertificateSpecSecretTemplate { annotations?: Record<string, string>; labels?: Record<string, string> }
interface CertificateSpecSubject { countries?: string[]; localities?: string[]; organizations?: string[] }
interface CertificateSpec { secretName: string; issuerRef: CertificateSpecIssuerRef; commonName?: string; dnsNames?: string[]; duration?: string; keystores?: CertificateSpecKeystores; privateKey?: CertificateSpecPrivateKey; renewBefore?: string; secretTemplate?: CertificateSpecSecretTemplate; subject?: CertificateSpecSubject; usages?: string[] }
interface CertificateStatusConditions { type: string; status: string; lastProbeTime?: string; lastTransitionTime?: string; message?: string; observedGeneration?: number; reason?: string }
interface CertificateStatus { conditions?: CertificateStatusConditions[]; failedIssuanceAttempts?: number; lastFailureTime?: string; nextPrivateKeySecretName?: string; notAfter?: string; notBefore?: string; renewalTime?: string; revision?: number }
interface Certificate { metadata: ObjectMeta; apiVersion?: string; kind?: string; spec?: CertificateSpec; status?: CertificateStatus; "x-extra"?: unknown }
interface T3dMapData { x?: unknown }
interface T3dMap { any?: { [k: string]: unknown }; data?: Record<string, T3dMapData>; free?: unknown }
interface EventRegarding { name?: string }
interface Event { note?: string; regarding?: EventRegarding }
interface EventInvolvedObject { name?: string }
interface EventCore { involvedObject?: EventInvolvedObject; message?: string }
interface ObjectMetaManagedFields { manager?: string; operation?: string }
interface ObjectMetaOwnerReferences { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }
interface ObjectMeta { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; finalizers?: string[]; generateName?: string; generation?: number; labels?: Record<string, string>; managedFields?: ObjectMetaManagedFields[]; ownerReferences?: ObjectMetaOwnerReferences[]; resourceVersion?: string; uid?: string }
