package nodecleanup

import (
	"context"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// maxPodGuesses bounds the pod GETs made for one claim.
const maxPodGuesses = 8

// podsOfClaim returns the pods that use a claim, found without listing
// pods: each candidate named by podNames is read with a GET and kept only if
// one of its volumes is the claim. Errors only cost an Event.
func (c *controller) podsOfClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) []*v1.Pod {
	logger := klog.FromContext(ctx)
	var out []*v1.Pod
	for _, name := range podNames(claim) {
		pod, err := c.kube.CoreV1().Pods(claim.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			logger.V(4).Info("No pod of the claim under this name", "pod", klog.KRef(claim.Namespace, name), "err", err)
			continue
		}
		if usesClaim(pod, claim.Name) {
			out = append(out, pod)
		}
	}
	return out
}

// podNames guesses the names of the pods that use a claim, most likely
// first, at most maxPodGuesses:
//   - the claim's owners of kind Pod (a generic ephemeral volume's claim);
//   - for a StatefulSet's claim, named <template>-<set>-<ordinal>, the pod
//     <set>-<ordinal>: the set is the claim's StatefulSet owner when it has
//     one (persistentVolumeClaimRetentionPolicy), otherwise every suffix of
//     the name after a dash, since a template name may hold dashes too.
func podNames(claim *v1.PersistentVolumeClaim) []string {
	var out []string
	add := func(name string) {
		if name != "" && len(out) < maxPodGuesses && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, o := range claim.OwnerReferences {
		if o.Kind == "Pod" && o.APIVersion == "v1" {
			add(o.Name)
		}
	}
	base, ordinal, ok := cutOrdinal(claim.Name)
	if !ok {
		return out
	}
	for _, o := range claim.OwnerReferences {
		if o.Kind == "StatefulSet" && strings.HasSuffix(base, "-"+o.Name) {
			add(o.Name + "-" + ordinal)
		}
	}
	for i := range len(base) {
		if base[i] == '-' {
			add(base[i+1:] + "-" + ordinal)
		}
	}
	return out
}

// cutOrdinal splits "<base>-<digits>".
func cutOrdinal(name string) (base, ordinal string, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", "", false
	}
	for _, r := range name[i+1:] {
		if r < '0' || r > '9' {
			return "", "", false
		}
	}
	return name[:i], name[i+1:], true
}

// usesClaim reports whether a pod's volumes name the claim, directly or as
// the claim of a generic ephemeral volume (named <pod>-<volume>).
func usesClaim(pod *v1.Pod, claim string) bool {
	return slices.ContainsFunc(pod.Spec.Volumes, func(v v1.Volume) bool {
		return (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim) ||
			(v.Ephemeral != nil && pod.Name+"-"+v.Name == claim)
	})
}
