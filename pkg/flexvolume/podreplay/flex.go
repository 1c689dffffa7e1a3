package podreplay

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// UsesFlexDrivers returns a match for Replay: pods with a volume of one of
// drivers, inline or through a bound claim.
func UsesFlexDrivers(drivers []string, pvcs corelisters.PersistentVolumeClaimLister, pvs corelisters.PersistentVolumeLister) func(*v1.Pod) bool {
	return UsesFlexDriversVia(drivers, func(namespace, claim string) *v1.PersistentVolume {
		pvc, err := pvcs.PersistentVolumeClaims(namespace).Get(claim)
		if err != nil || pvc.Spec.VolumeName == "" {
			return nil
		}
		pv, err := pvs.Get(pvc.Spec.VolumeName)
		if err != nil {
			return nil
		}
		return pv
	})
}

// UsesFlexDriversVia is UsesFlexDrivers with a function that returns the PV
// bound to a claim, or nil.
func UsesFlexDriversVia(drivers []string, boundPV func(namespace, claim string) *v1.PersistentVolume) func(*v1.Pod) bool {
	return func(pod *v1.Pod) bool {
		for _, vol := range pod.Spec.Volumes {
			switch {
			case vol.FlexVolume != nil:
				if slices.Contains(drivers, vol.FlexVolume.Driver) {
					return true
				}
			case vol.PersistentVolumeClaim != nil:
				pv := boundPV(pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
				if pv != nil && pv.Spec.FlexVolume != nil && slices.Contains(drivers, pv.Spec.FlexVolume.Driver) {
					return true
				}
			}
		}
		return false
	}
}
