package podreplay

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// UsesFlexDrivers returns a match for Replay: pods with a volume of one of
// drivers, inline or through a bound claim.
func UsesFlexDrivers(drivers []string, pvcs corelisters.PersistentVolumeClaimLister, pvs corelisters.PersistentVolumeLister) func(*v1.Pod) bool {
	return func(pod *v1.Pod) bool {
		for _, vol := range pod.Spec.Volumes {
			switch {
			case vol.FlexVolume != nil:
				if slices.Contains(drivers, vol.FlexVolume.Driver) {
					return true
				}
			case vol.PersistentVolumeClaim != nil:
				pvc, err := pvcs.PersistentVolumeClaims(pod.Namespace).Get(vol.PersistentVolumeClaim.ClaimName)
				if err != nil || pvc.Spec.VolumeName == "" {
					continue
				}
				pv, err := pvs.Get(pvc.Spec.VolumeName)
				if err == nil && pv.Spec.FlexVolume != nil && slices.Contains(drivers, pv.Spec.FlexVolume.Driver) {
					return true
				}
			}
		}
		return false
	}
}
