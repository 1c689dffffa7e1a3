package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
	utilexec "k8s.io/utils/exec"
)

// fakeStream plays one pods/exec session.
type fakeStream struct {
	stdout string
	err    error
	hang   bool
}

func (f *fakeStream) Stream(o remotecommand.StreamOptions) error {
	return f.StreamWithContext(context.Background(), o)
}

func (f *fakeStream) StreamWithContext(ctx context.Context, o remotecommand.StreamOptions) error {
	io.WriteString(o.Stdout, f.stdout)
	if f.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.err
}

func TestAPIExecutor(t *testing.T) {
	rc, err := rest.RESTClientFor(&rest.Config{Host: "https://apiserver.invalid", APIPath: "/api",
		ContentConfig: rest.ContentConfig{GroupVersion: &v1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		stream   *fakeStream
		wantCode int
		wantErr  error
		wantOut  string
	}{
		"success":          {stream: &fakeStream{stdout: "ok"}, wantOut: "ok"},
		"exit code kept":   {stream: &fakeStream{stdout: "x", err: clientexec.CodeExitError{Err: errors.New("command terminated with exit code 4"), Code: 4}}, wantCode: 4, wantOut: "x"},
		"never answers":    {stream: &fakeStream{hang: true}, wantErr: ErrTimeout},
		"output too large": {stream: &fakeStream{stdout: strings.Repeat("y", 2048)}, wantErr: ErrOutputTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var url string
			e := NewAPIExecutor(&rest.Config{}, rc, func(_ *rest.Config, req *rest.Request) (remotecommand.Executor, error) {
				url = req.URL().String()
				return tc.stream, nil
			}, 1024)
			out, _, err := e.ExecInPod(context.Background(), target, []string{"attach", "{}"}, 200*time.Millisecond)
			var ee utilexec.ExitError
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			case tc.wantCode != 0:
				if !errors.As(err, &ee) || ee.ExitStatus() != tc.wantCode {
					t.Fatalf("err %v, want exit %d", err, tc.wantCode)
				}
			case err != nil:
				t.Fatal(err)
			}
			if tc.wantOut != "" && string(out) != tc.wantOut {
				t.Fatalf("out %q", out)
			}
			for _, want := range []string{"/namespaces/kube-mount/pods/mp/exec", "container=utilities", "command=attach", "stdout=true"} {
				if !strings.Contains(url, want) {
					t.Errorf("url %s lacks %s", url, want)
				}
			}
		})
	}
}

func TestFallBackToSPDY(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "upgrade failure from client-go's WebSocket executor",
			err: fmt.Errorf("connecting: %w", &httpstream.UpgradeFailureError{Cause: errors.New("403")}), want: true},
		{name: "HTTPS proxy dial error", err: errors.New("proxy: unknown scheme: https"), want: true},
		{name: "command failed", err: errors.New("command terminated with exit code 1"), want: false},
		{name: "no error", err: nil, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fallBackToSPDY(tc.err); got != tc.want {
				t.Errorf("fallBackToSPDY(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
