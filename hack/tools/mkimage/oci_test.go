package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testRef = "docker.io/nodeplug/test:v1"

func TestIndexLayout(t *testing.T) {
	dir := t.TempDir()
	amd := archive(t, dir, "amd64", "amd64 binary")
	arm := archive(t, dir, "arm64", "arm64 binary")
	out := filepath.Join(dir, "test.oci.tar")
	if err := writeIndex(out, testRef, []string{arm, amd}); err != nil {
		t.Fatal(err)
	}
	files := readLayout(t, out)
	top := decode[ociIndex](t, files["index.json"])

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "oci-layout names version 1.0.0", check: func(t *testing.T) {
			var v struct{ ImageLayoutVersion string }
			if err := json.Unmarshal(files["oci-layout"], &v); err != nil || v.ImageLayoutVersion != "1.0.0" {
				t.Errorf("oci-layout %q: %v", files["oci-layout"], err)
			}
		}},
		{name: "index.json holds one image index named by the reference", check: func(t *testing.T) {
			if top.SchemaVersion != 2 || top.MediaType != mediaTypeIndex || len(top.Manifests) != 1 {
				t.Fatalf("index.json %+v", top)
			}
			d := top.Manifests[0]
			if d.MediaType != mediaTypeIndex || d.Annotations[annotationRefName] != "v1" || d.Annotations[annotationImageName] != testRef {
				t.Errorf("index.json descriptor %+v", d)
			}
		}},
		{name: "the image index lists linux/amd64 and linux/arm64", check: func(t *testing.T) {
			idx := decode[ociIndex](t, blob(t, files, top.Manifests[0]))
			var got []string
			for _, m := range idx.Manifests {
				if m.MediaType != mediaTypeManifest || m.Platform == nil {
					t.Fatalf("manifest descriptor %+v", m)
				}
				got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
			}
			if strings.Join(got, " ") != "linux/amd64 linux/arm64" {
				t.Errorf("platforms %v", got)
			}
		}},
		{name: "each manifest's config names its platform and its layer holds its own files", check: func(t *testing.T) {
			idx := decode[ociIndex](t, blob(t, files, top.Manifests[0]))
			for _, md := range idx.Manifests {
				checkManifest(t, files, md)
			}
		}},
		{name: "every blob is named by its digest and referenced", check: func(t *testing.T) {
			for name, b := range files {
				if h, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && digest(b) != h {
					t.Errorf("%s holds a blob of digest %s", name, digest(b))
				}
			}
			// index, 2 manifests, 2 configs, 2 layers
			if n := len(files) - 2; n != 7 {
				t.Errorf("%d blobs, want 7", n)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.check)
	}
}

func TestIndexReproducible(t *testing.T) {
	dir := t.TempDir()
	inputs := []string{archive(t, dir, "amd64", "a"), archive(t, dir, "arm64", "b")}
	var outs [2][]byte
	for i := range outs {
		out := filepath.Join(dir, "out.tar")
		if err := writeIndex(out, testRef, inputs); err != nil {
			t.Fatal(err)
		}
		outs[i], _ = os.ReadFile(out)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two runs wrote different bytes")
	}
}

func TestIndexRefusals(t *testing.T) {
	dir := t.TempDir()
	amd := archive(t, dir, "amd64", "a")
	notArchive := filepath.Join(dir, "plain.tar")
	if err := writeTar(notArchive, map[string][]byte{"hello": []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, out, ref string
		inputs         []string
		want           string
	}{
		{name: "no output", ref: testRef, inputs: []string{amd}, want: "-o is required"},
		{name: "reference without a tag", out: "x", ref: "docker.io/nodeplug/test", inputs: []string{amd}, want: "needs a tag"},
		{name: "no archives", out: "x", ref: testRef, want: "no platform images"},
		{name: "two archives of one platform", out: "x", ref: testRef, inputs: []string{amd, amd}, want: "two images for linux/amd64"},
		{name: "missing archive", out: "x", ref: testRef, inputs: []string{filepath.Join(dir, "nope.tar")}, want: "no such file"},
		{name: "tarball that is not a docker-archive", out: "x", ref: testRef, inputs: []string{notArchive}, want: "not a docker-archive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out != "" {
				out = filepath.Join(dir, out)
			}
			err := writeIndex(out, tc.ref, tc.inputs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestUnknownArch(t *testing.T) {
	s := imageSpec{out: "x", name: testRef, arch: "riscv64"}
	if err := s.parse(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "want amd64 or arm64") {
		t.Errorf("error %v", err)
	}
}

// checkManifest checks one platform's manifest, config and layer.
func checkManifest(t *testing.T, files map[string][]byte, md descriptor) {
	t.Helper()
	m := decode[ociManifest](t, blob(t, files, md))
	cfg := decode[struct {
		platform
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}](t, blob(t, files, m.Config))
	if m.Config.MediaType != mediaTypeConfig || cfg.platform != *md.Platform {
		t.Errorf("%s: config %+v platform %+v", md.Platform.Architecture, m.Config, cfg.platform)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != mediaTypeLayer || len(cfg.RootFS.DiffIDs) != 1 {
		t.Fatalf("%s: layers %+v diff_ids %v", md.Platform.Architecture, m.Layers, cfg.RootFS.DiffIDs)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, m.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if "sha256:"+digest(layer) != cfg.RootFS.DiffIDs[0] {
		t.Errorf("%s: diff_id %s is not the uncompressed layer's digest", md.Platform.Architecture, cfg.RootFS.DiffIDs[0])
	}
	content, err := readTar(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	if want := md.Platform.Architecture + " binary"; string(content["bin/tool"]) != want {
		t.Errorf("%s: bin/tool holds %q, want %q", md.Platform.Architecture, content["bin/tool"], want)
	}
}

// archive writes a docker-archive for arch whose /bin/tool holds content.
func archive(t *testing.T, dir, arch, content string) string {
	t.Helper()
	src := filepath.Join(dir, "tool-"+arch)
	if err := os.WriteFile(src, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	s := imageSpec{out: filepath.Join(dir, "image-"+arch+".tar"), name: testRef, arch: arch, entrypoint: []string{"/bin/tool"}}
	if err := s.parse([]string{"/bin/tool=" + src}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.write(); err != nil {
		t.Fatal(err)
	}
	return s.out
}

func readLayout(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, err := readTar(f)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// blob returns the blob d points at, checking its size and digest.
func blob(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok {
		t.Fatalf("no blob %s", d.Digest)
	}
	if int64(len(b)) != d.Size || "sha256:"+digest(b) != d.Digest {
		t.Fatalf("blob %s: size %d (descriptor %d), digest %s", d.Digest, len(b), d.Size, digest(b))
	}
	return b
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}
