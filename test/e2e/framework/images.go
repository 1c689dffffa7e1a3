package framework

import (
	"os"
	"regexp"
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

// manifestImage matches an image in a YAML manifest when it is one of
// nodeplug's own (docker.io/nodeplug/..., or nodeplug/... in short): a
// container's image, or an environment value naming one (the local volume
// provisioner's JOB_IMAGE): the key and any quote, then the repository.
var manifestImage = regexp.MustCompile(`(?m)^(\s*(?:-\s+)?(?:image|value):\s*["']?)(?:docker\.io/)?nodeplug/`)

// ManifestImages returns the YAML manifest raw with nodeplug's own images
// taken from E2E_IMAGE_REPO; with the default repository it returns raw
// unchanged.
func ManifestImages(raw []byte) []byte { return rewriteImages(raw, os.Getenv(ImageRepoEnv)) }

func rewriteImages(raw []byte, repo string) []byte {
	repo = strings.TrimRight(strings.TrimSpace(repo), "/")
	if repo == "" || repo == DefaultImageRepo {
		return raw
	}
	return manifestImage.ReplaceAll(raw, []byte("${1}"+strings.ReplaceAll(repo, "$", "$$")+"/"))
}
