package main

import (
	"archive/tar"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// nameAnnotation is the annotation of an OCI layout's index entry that
// holds the full image name (containerd's, which mkimage index writes).
const nameAnnotation = "io.containerd.image.name"

// push writes the archive to the registry and returns the reference with
// its digest.
func push(o options) (string, error) {
	rt, err := transportWithTimeout(o.ca, o.timeout)
	if err != nil {
		return "", err
	}
	kind, meta, err := inspect(o.archive)
	if err != nil {
		return "", err
	}
	target := o.ref
	if target == "" {
		if meta.name == "" {
			return "", errors.New("the archive names no image; give a REFERENCE")
		}
		if target, err = rehome(meta.name, o.registry); err != nil {
			return "", err
		}
	}
	ref, err := name.ParseReference(target)
	if err != nil {
		return "", fmt.Errorf("reference %q: %w", target, err)
	}
	opt := remote.WithTransport(rt)
	var digest v1.Hash
	switch kind {
	case kindDocker:
		img, err := tarball.ImageFromPath(o.archive, nil)
		if err != nil {
			return "", fmt.Errorf("reading the docker-archive: %w", err)
		}
		if digest, err = img.Digest(); err == nil {
			err = remote.Write(ref, img, opt)
		}
		if err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
	case kindOCI:
		idx, cleanup, err := ociIndex(o.archive)
		if err != nil {
			return "", err
		}
		defer cleanup()
		if digest, err = idx.Digest(); err == nil {
			err = remote.WriteIndex(ref, idx, opt)
		}
		if err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
	}
	return ref.Context().Name() + ":" + tagOf(ref) + "@" + digest.String(), nil
}

func tagOf(ref name.Reference) string {
	if t, ok := ref.(name.Tag); ok {
		return t.TagStr()
	}
	return "latest"
}

// rehome replaces the registry of image with registry:
// docker.io/library/foo:1 on localhost:5000 is localhost:5000/library/foo:1.
func rehome(image, registry string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("the archive's image name %q: %w", image, err)
	}
	return registry + "/" + ref.Context().RepositoryStr() + ":" + tagOf(ref), nil
}

// transport trusts only the given CA (or, without one, the system's
// roots) and always speaks TLS: go-containerregistry
// picks plain HTTP for localhost and loopback names, which the registry
// does not serve.
func transport(caFile string) (http.RoundTripper, error) {
	return transportWithTimeout(caFile, headerTimeout)
}

// headerTimeout bounds the wait for a response's headers: a registry that
// accepts and never answers fails the push instead of hanging it.
const headerTimeout = 60 * time.Second

func transportWithTimeout(caFile string, timeout time.Duration) (http.RoundTripper, error) {
	var pool *x509.CertPool // nil: the system's roots
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading the CA: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	base.ResponseHeaderTimeout = timeout
	base.TLSHandshakeTimeout = timeout
	return tlsOnly{base}, nil
}

type tlsOnly struct{ base http.RoundTripper }

func (t tlsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" {
		req = req.Clone(req.Context())
		req.URL.Scheme = "https"
	}
	return t.base.RoundTrip(req)
}

type archiveKind int

const (
	kindDocker archiveKind = iota
	kindOCI
)

type archiveMeta struct{ name string }

// inspect tells a docker-archive (manifest.json) from an OCI layout
// (index.json) and reads the image's name from either.
func inspect(path string) (archiveKind, archiveMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, archiveMeta{}, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return 0, archiveMeta{}, errors.New("neither a docker-archive (manifest.json) nor an OCI image layout (index.json)")
		}
		if err != nil {
			return 0, archiveMeta{}, fmt.Errorf("reading the archive: %w", err)
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case "manifest.json":
			var m []struct{ RepoTags []string }
			if err := json.NewDecoder(tr).Decode(&m); err != nil || len(m) != 1 {
				return 0, archiveMeta{}, fmt.Errorf("manifest.json must describe exactly one image (%d, %v)", len(m), err)
			}
			meta := archiveMeta{}
			if len(m[0].RepoTags) > 0 {
				meta.name = m[0].RepoTags[0]
			}
			return kindDocker, meta, nil
		case "index.json":
			var idx v1.IndexManifest
			if err := json.NewDecoder(tr).Decode(&idx); err != nil || len(idx.Manifests) != 1 {
				return 0, archiveMeta{}, fmt.Errorf("index.json must point at exactly one image index (%d, %v)", len(idx.Manifests), err)
			}
			return kindOCI, archiveMeta{name: idx.Manifests[0].Annotations[nameAnnotation]}, nil
		}
	}
}

// ociIndex unpacks an OCI layout archive into a temporary directory and
// returns the one index its index.json points at.
func ociIndex(path string) (v1.ImageIndex, func(), error) {
	dir, err := os.MkdirTemp("", "push-oci-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if err := untar(path, dir); err != nil {
		cleanup()
		return nil, nil, err
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err == nil {
		var m *v1.IndexManifest
		if m, err = top.IndexManifest(); err == nil {
			var idx v1.ImageIndex
			if idx, err = top.ImageIndex(m.Manifests[0].Digest); err == nil {
				return idx, cleanup, nil
			}
		}
	}
	cleanup()
	return nil, nil, fmt.Errorf("reading the OCI layout: %w", err)
}

// untar writes the regular files of the archive below dir, refusing any
// name that would leave it.
func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		clean := filepath.Clean(h.Name)
		if !filepath.IsLocal(clean) {
			return fmt.Errorf("the archive holds %q, outside its root", h.Name)
		}
		dst := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}
