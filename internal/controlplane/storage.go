package controlplane

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// The default StorageClass of the living cluster and its simulated
// provisioner: a claim of the class gets a PersistentVolume at once
// (binding is kube-controller-manager's), a bigger request resizes the
// volume, and a deleted claim's volume is deleted.
const (
	// DefaultStorageClass is the name of the default StorageClass.
	DefaultStorageClass = "standard"
	// Provisioner provisions and resizes the volumes of DefaultStorageClass.
	Provisioner   = "kubecode.io/simulated"
	provisionedBy = "pv.kubernetes.io/provisioned-by"
)

type storageSim struct {
	cs       kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedDelayingInterface[string]
	recorder record.EventRecorder
	bcast    record.EventBroadcaster
}

func newStorageSim(cs kubernetes.Interface, f informers.SharedInformerFactory) *storageSim {
	s := &storageSim{cs: cs, queue: workqueue.NewTypedDelayingQueue[string]()}
	pvcs, pvs := f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes()
	enqueue := func(prefix string) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if k, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				s.queue.Add(prefix + k)
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
	}
	_, _ = pvcs.Informer().AddEventHandler(enqueue("claim:"))
	_, _ = pvs.Informer().AddEventHandler(enqueue("volume:"))
	s.claims, s.volumes = pvcs.Lister(), pvs.Lister()
	s.synced = []cache.InformerSynced{pvcs.Informer().HasSynced, pvs.Informer().HasSynced}
	return s
}

// ensureStorageClass creates the default StorageClass.
func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultStorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          Provisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("default StorageClass: %w", err)
	}
	return nil
}

func (s *storageSim) run(ctx context.Context) {
	s.bcast = record.NewBroadcaster(record.WithContext(ctx))
	s.bcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.cs.CoreV1().Events("")})
	s.recorder = s.bcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Provisioner})
	defer s.bcast.Shutdown()
	go func() { <-ctx.Done(); s.queue.ShutDown() }()
	for {
		key, quit := s.queue.Get()
		if quit {
			return
		}
		var err error
		if k, ok := strings.CutPrefix(key, "claim:"); ok {
			err = s.syncClaim(ctx, k)
		} else if k, ok := strings.CutPrefix(key, "volume:"); ok {
			err = s.syncVolume(ctx, k)
		}
		if err != nil && ctx.Err() == nil {
			s.queue.AddAfter(key, time.Second)
		}
		s.queue.Done(key)
	}
}

// syncClaim provisions a volume for a pending claim of the class, or
// resizes the bound one.
func (s *storageSim) syncClaim(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pvc, err := s.claims.PersistentVolumeClaims(ns).Get(name)
	if err != nil || pvc.DeletionTimestamp != nil {
		return nil
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != DefaultStorageClass {
		return nil
	}
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	pvName := "pvc-" + string(pvc.UID)
	if pvc.Spec.VolumeName == "" {
		if _, err := s.volumes.Get(pvName); err == nil {
			return nil
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{provisionedBy: Provisioner}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: request},
				AccessModes:                   pvc.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              DefaultStorageClass,
				VolumeMode:                    pvc.Spec.VolumeMode,
				ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: ns, Name: name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: "/var/lib/kubecode/volumes/" + pvName, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
			},
		}
		s.recorder.Event(pvc, corev1.EventTypeNormal, "Provisioning", fmt.Sprintf("External provisioner is provisioning volume for claim %q", key))
		if _, err := s.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			s.recorder.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed", err.Error())
			return err
		}
		s.recorder.Event(pvc, corev1.EventTypeNormal, "ProvisioningSucceeded", fmt.Sprintf("Successfully provisioned volume %s", pvName))
		return nil
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return nil
	}
	pv, err := s.volumes.Get(pvc.Spec.VolumeName)
	if err != nil || pv.Annotations[provisionedBy] != Provisioner {
		return nil
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	if request.Cmp(capacity) > 0 {
		up := pv.DeepCopy()
		up.Spec.Capacity[corev1.ResourceStorage] = request
		if _, err := s.cs.CoreV1().PersistentVolumes().Update(ctx, up, metav1.UpdateOptions{}); err != nil {
			return err
		}
		s.recorder.Event(pvc, corev1.EventTypeNormal, "Resizing", fmt.Sprintf("External resizer is resizing volume %s", pv.Name))
		capacity = request
	}
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	if capacity.Cmp(have) != 0 {
		up := pvc.DeepCopy()
		up.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: capacity}
		up.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: capacity}
		up.Status.Conditions = nil
		up.Status.AllocatedResourceStatuses = nil
		if _, err := s.cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if !have.IsZero() {
			s.recorder.Event(pvc, corev1.EventTypeNormal, "FileSystemResizeSuccessful", fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q", pv.Name))
		}
	}
	return nil
}

// syncVolume deletes a released volume of the provisioner.
func (s *storageSim) syncVolume(ctx context.Context, name string) error {
	pv, err := s.volumes.Get(name)
	if err != nil || pv.Annotations[provisionedBy] != Provisioner {
		return nil
	}
	if pv.Status.Phase == corev1.VolumeReleased && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete && pv.DeletionTimestamp == nil {
		if err := s.cs.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
