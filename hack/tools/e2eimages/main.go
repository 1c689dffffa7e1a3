// Command e2eimages prints the image references that upstream's e2e specs
// (k8s.io/kubernetes/test/utils/image, at the version go.mod pins) use for
// the images hack/e2e-upstream.sh builds, one "KEY REFERENCE" a line:
// agnhost, busybox, nginx and pause. KUBE_TEST_REPO_LIST changes them as it
// changes them for the specs.
package main

import (
	"fmt"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

func main() {
	for _, img := range []struct {
		key string
		id  imageutils.ImageID
	}{
		{"agnhost", imageutils.Agnhost},
		{"busybox", imageutils.BusyBox},
		{"nginx", imageutils.Nginx},
		{"glibc-dns-testing", imageutils.GlibcDnsTesting},
		{"pause", imageutils.Pause},
	} {
		fmt.Println(img.key, imageutils.GetE2EImage(img.id))
	}
}
