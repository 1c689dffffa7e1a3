package localpv

import (
	"bufio"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// requestCounter is a reverse proxy in front of the apiserver that counts
// the requests passing through it by verb and resource, and the failed ones.
// A process given the proxy's URL needs no credentials: the proxy sends its
// requests with the identity of cfg.
type requestCounter struct {
	server *httptest.Server
	infos  *request.RequestInfoFactory

	mu     sync.Mutex
	counts map[string]int
	failed map[string]int
}

func startRequestCounter(t testing.TB, cfg *rest.Config) *requestCounter {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &requestCounter{
		infos:  &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		counts: map[string]int{}, failed: map[string]int{},
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // stream watches
	}
	c.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := c.key(r)
		c.mu.Lock()
		c.counts[key]++ // now: a watch may never end
		c.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(sw, r)
		if sw.status >= 400 {
			c.mu.Lock()
			c.failed[key+" "+strconv.Itoa(sw.status)]++
			c.mu.Unlock()
		}
	}))
	t.Cleanup(c.server.Close)
	return c
}

// key names a request as "verb resource", e.g. "create persistentvolumes".
func (c *requestCounter) key(r *http.Request) string {
	info, err := c.infos.NewRequestInfo(r)
	switch {
	case err != nil:
		return strings.ToLower(r.Method) + " " + r.URL.Path
	case !info.IsResourceRequest:
		return info.Verb + " " + info.Path
	case info.Subresource != "":
		return info.Verb + " " + info.Resource + "/" + info.Subresource
	}
	return info.Verb + " " + info.Resource
}

// snapshot returns the total, the counts by key, and the failed requests by
// key and status code.
func (c *requestCounter) snapshot() (int, map[string]int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.counts {
		total += n
	}
	return total, maps.Clone(c.counts), maps.Clone(c.failed)
}

// format lists counts as "key=n" sorted by key.
func format(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// statusWriter remembers the status code of a response and keeps it
// flushable, so watches stream through the proxy.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// procMemory returns the current and the peak resident set size of a
// process, in bytes, from /proc/<pid>/status (VmRSS and VmHWM).
func procMemory(pid int) (rss, peak int64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "VmRSS" && key != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s of process %d: %w", key, pid, err)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	if peak == 0 {
		return 0, 0, fmt.Errorf("no VmHWM for process %d", pid)
	}
	return rss, peak, sc.Err()
}
