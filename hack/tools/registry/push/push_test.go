package main

import (
	"archive/tar"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nodeplug/nodeplug/hack/tools/registry/server"
)

// TestPush pushes archives into the real registry server over TLS on
// 127.0.0.1 and reads them back.
func TestPush(t *testing.T) {
	dir := t.TempDir()
	ca, otherCA := writePKI(t, dir)
	addr := startRegistry(t, dir)
	host := "localhost:" + strings.Split(addr, ":")[1]

	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	docker := filepath.Join(dir, "docker.tar")
	if err := tarball.WriteToFile(docker, name.MustParseReference("docker.io/library/user-image:1"), img); err != nil {
		t.Fatal(err)
	}
	oci := writeOCIArchive(t, dir)
	evil := writeTar(t, filepath.Join(dir, "evil.tar"), map[string]string{
		"index.json": `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:` + strings.Repeat("0", 64) + `","size":2,"annotations":{"io.containerd.image.name":"docker.io/x/evil:1"}}]}`,
		"../escape":  "x",
	})
	neither := writeTar(t, filepath.Join(dir, "neither.tar"), map[string]string{"hello": "x"})

	cases := []struct {
		name    string
		o       options
		want    string // prefix of the pushed reference
		wantErr string
	}{
		{name: "docker-archive keeps its repository on the registry", o: options{ca: ca, registry: host, archive: docker}, want: host + "/library/user-image:1@sha256:"},
		{name: "docker-archive to a named reference", o: options{ca: ca, archive: docker, ref: host + "/nodeplug/renamed:2"}, want: host + "/nodeplug/renamed:2@"},
		{name: "OCI index with two platforms", o: options{ca: ca, registry: host, archive: oci}, want: host + "/nodeplug/multi:1@"},
		{name: "registry not signed by the CA given", o: options{ca: otherCA, registry: host, archive: docker}, wantErr: "certificate"},
		{name: "no CA given: the system roots do not know the registry", o: options{registry: host, archive: docker}, wantErr: "certificate"},
		{name: "archive path leaving its root", o: options{ca: ca, registry: host, archive: evil}, wantErr: "outside its root"},
		{name: "neither docker-archive nor OCI layout", o: options{ca: ca, registry: host, archive: neither}, wantErr: "neither a docker-archive"},
		{name: "registry that accepts and never answers", o: options{ca: ca, archive: docker, ref: silentListener(t) + "/x/y:1", timeout: time.Second}, wantErr: "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.timeout == 0 {
				tc.o.timeout = headerTimeout
			}
			got, err := push(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("push = %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("push = %q, %v; want %s...", got, err, tc.want)
			}
			rt, _ := transport(ca)
			ref, err := name.ParseReference(got)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Get(ref, remote.WithTransport(rt))
			if err != nil {
				t.Fatalf("reading back %s: %v", got, err)
			}
			if !strings.HasSuffix(got, desc.Digest.String()) {
				t.Errorf("registry holds %s; push printed %s", desc.Digest, got)
			}
		})
	}
}

func startRegistry(t *testing.T, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.ServeOn(ctx, server.Options{Root: filepath.Join(dir, "data"), Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), LogLevel: "panic"}, []net.Listener{l})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && err != http.ErrServerClosed {
			t.Errorf("registry: %v", err)
		}
	})
	return l.Addr().String()
}

// silentListener accepts connections and never answers.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return "localhost:" + strings.Split(l.Addr().String(), ":")[1]
}

func writeOCIArchive(t *testing.T, dir string) string {
	t.Helper()
	var idx v1.ImageIndex = empty.Index
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	lay := filepath.Join(dir, "layout")
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{nameAnnotation: "docker.io/nodeplug/multi:1"})); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	_ = filepath.Walk(lay, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			b, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(lay, path)
			files[rel] = string(b)
		}
		return err
	})
	return writeTar(t, filepath.Join(dir, "multi.oci.tar"), files)
}

func writeTar(t *testing.T, path string, files map[string]string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for n, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// writePKI writes a CA, a serving pair for localhost and 127.0.0.1 signed
// by it (tls.crt, tls.key), and an unrelated CA; it returns the two CAs.
func writePKI(t *testing.T, dir string) (ca, other string) {
	t.Helper()
	caKey, caCert := selfSigned(t, "test-ca")
	_, otherCert := selfSigned(t, "other-ca")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "registry"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	writePEM(t, filepath.Join(dir, "tls.crt"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, "tls.key"), "EC PRIVATE KEY", keyDER)
	ca, other = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.crt")
	writePEM(t, ca, "CERTIFICATE", caCert.Raw)
	writePEM(t, other, "CERTIFICATE", otherCert.Raw)
	return ca, other
}

func selfSigned(t *testing.T, cn string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
