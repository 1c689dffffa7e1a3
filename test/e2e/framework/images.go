package framework

import (
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ImageRepoEnv names the registry repository the tests' own images come
// from (E2E_IMAGE_REPO); DefaultImageRepo is the name local-up imports them
// under into every node's containerd.
const (
	ImageRepoEnv     = "E2E_IMAGE_REPO"
	DefaultImageRepo = "docker.io/nodeplug"
)

// BusyboxImage is the busybox image the tests' pods run.
var BusyboxImage = Image("busybox:1")

// Image returns the reference of one of nodeplug's images, name with its
// tag (e.g. "busybox:1"), in E2E_IMAGE_REPO.
func Image(name string) string { return imageRef(os.Getenv(ImageRepoEnv), name) }

func imageRef(repo, name string) string {
	repo = strings.TrimRight(strings.TrimSpace(repo), "/")
	if repo == "" {
		repo = DefaultImageRepo
	}
	return repo + "/" + name
}

// ImagePullPolicy is the policy of the tests' pods: Never on the local
// cluster, whose nodes have every image imported (a pull would go to a
// registry that may not have it), IfNotPresent on an existing cluster,
// which pulls them from E2E_IMAGE_REPO.
func ImagePullPolicy() corev1.PullPolicy { return pullPolicy(clusterModeFromEnv()) }

func pullPolicy(m ClusterMode) corev1.PullPolicy {
	if m == ModeExisting {
		return corev1.PullIfNotPresent
	}
	return corev1.PullNever
}
