package podreplay

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestUsesFlexDrivers(t *testing.T) {
	pvcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pvIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pvcIdx.Add(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "flex-claim", Namespace: "default"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "flex-pv"}})
	pvcIdx.Add(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other-claim", Namespace: "default"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "nfs-pv"}})
	pvcIdx.Add(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"}})
	pvIdx.Add(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "flex-pv"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{FlexVolume: &v1.FlexPersistentVolumeSource{Driver: "acme/attach"}}}})
	pvIdx.Add(&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "nfs-pv"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{}}}})
	match := UsesFlexDrivers([]string{"acme/attach"}, corelisters.NewPersistentVolumeClaimLister(pvcIdx), corelisters.NewPersistentVolumeLister(pvIdx))
	withVol := func(vs v1.VolumeSource) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: vs}}}}
	}
	claim := func(n string) v1.VolumeSource {
		return v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: n}}
	}
	cases := map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"inline, the driver":     {withVol(v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{Driver: "acme/attach"}}), true},
		"inline, another driver": {withVol(v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{Driver: "acme/other"}}), false},
		"claim of a flex PV":     {withVol(claim("flex-claim")), true},
		"claim of another PV":    {withVol(claim("other-claim")), false},
		"unbound claim":          {withVol(claim("unbound")), false},
		"missing claim":          {withVol(claim("nope")), false},
		"no volumes":             {&v1.Pod{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := match(tc.pod); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
