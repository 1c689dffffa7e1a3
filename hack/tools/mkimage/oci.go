package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// The OCI media types and annotations an image layout uses
// (opencontainers/image-spec v1.1).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	annotationRefName = "org.opencontainers.image.ref.name"
	// annotationImageName is the full reference; containerd's importer
	// names the image after it.
	annotationImageName = "io.containerd.image.name"
)

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociIndex struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type ociManifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// platformImage is one platform's image read from a docker-archive.
type platformImage struct {
	platform platform
	config   []byte
	layers   [][]byte // uncompressed layer tars
}

// layout is an OCI image layout being assembled: its blobs by digest.
type layout struct {
	blobs map[string][]byte
}

func (l *layout) add(mediaType string, b []byte) descriptor {
	d := "sha256:" + digest(b)
	l.blobs[d] = b
	return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
}

func (l *layout) addJSON(mediaType string, v any) (descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return l.add(mediaType, b), nil
}

// buildIndex writes the OCI image layout of one multi-platform image named
// ref: index.json points at one image index, which lists one manifest per
// platform. It returns the layout's files by path.
func buildIndex(ref string, images []platformImage) (map[string][]byte, error) {
	if !strings.Contains(ref, ":") {
		return nil, fmt.Errorf("image reference %q needs a tag", ref)
	}
	if len(images) == 0 {
		return nil, errors.New("no platform images")
	}
	l := &layout{blobs: map[string][]byte{}}
	seen := map[platform]bool{}
	var manifests []descriptor
	for _, img := range images {
		if seen[img.platform] {
			return nil, fmt.Errorf("two images for %s/%s", img.platform.OS, img.platform.Architecture)
		}
		seen[img.platform] = true
		d, err := l.addManifest(img)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", img.platform.OS, img.platform.Architecture, err)
		}
		manifests = append(manifests, d)
	}
	sort.Slice(manifests, func(i, j int) bool { return manifests[i].Platform.Architecture < manifests[j].Platform.Architecture })
	idx, err := l.addJSON(mediaTypeIndex, ociIndex{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: manifests})
	if err != nil {
		return nil, err
	}
	idx.Annotations = map[string]string{annotationRefName: ref[strings.LastIndex(ref, ":")+1:], annotationImageName: ref}
	top, err := json.Marshal(ociIndex{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{idx}})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": top}
	for d, b := range l.blobs {
		files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")] = b
	}
	return files, nil
}

// addManifest adds one platform's config, gzipped layers and manifest.
func (l *layout) addManifest(img platformImage) (descriptor, error) {
	m := ociManifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: l.add(mediaTypeConfig, img.config)}
	for _, layer := range img.layers {
		gz, err := gzipDeterministic(layer)
		if err != nil {
			return descriptor{}, err
		}
		m.Layers = append(m.Layers, l.add(mediaTypeLayer, gz))
	}
	d, err := l.addJSON(mediaTypeManifest, m)
	if err != nil {
		return descriptor{}, err
	}
	p := img.platform
	d.Platform = &p
	return d, nil
}

// gzipDeterministic compresses b with no name and a zero time in the
// header, so the same layer gives the same blob.
func gzipDeterministic(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readDockerArchive reads a single-image docker-archive, as mkimage
// writes it, and the platform its config names.
func readDockerArchive(path string) (platformImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return platformImage{}, err
	}
	defer f.Close()
	files, err := readTar(f)
	if err != nil {
		return platformImage{}, fmt.Errorf("%s: %w", path, err)
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return platformImage{}, fmt.Errorf("%s: not a docker-archive of one image: manifest.json: %w", path, err)
	}
	if len(manifest) != 1 {
		return platformImage{}, fmt.Errorf("%s: not a docker-archive of one image: manifest.json lists %d", path, len(manifest))
	}
	img := platformImage{config: files[manifest[0].Config]}
	if err := json.Unmarshal(img.config, &img.platform); err != nil || img.platform.Architecture == "" || img.platform.OS == "" {
		return platformImage{}, fmt.Errorf("%s: config %q names no os and architecture", path, manifest[0].Config)
	}
	for _, name := range manifest[0].Layers {
		layer, ok := files[name]
		if !ok {
			return platformImage{}, fmt.Errorf("%s: layer %q is missing", path, name)
		}
		img.layers = append(img.layers, layer)
	}
	return img, nil
}

func readTar(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = b
	}
}

// writeTar writes files, sorted by path, as a reproducible tarball.
func writeTar(out string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// writeIndex reads the docker-archives and writes their multi-platform
// OCI image layout to out as a tarball.
func writeIndex(out, ref string, archives []string) error {
	if out == "" {
		return errors.New("index: -o is required")
	}
	var images []platformImage
	for _, a := range archives {
		img, err := readDockerArchive(a)
		if err != nil {
			return err
		}
		images = append(images, img)
	}
	files, err := buildIndex(ref, images)
	if err != nil {
		return err
	}
	return writeTar(out, files)
}
