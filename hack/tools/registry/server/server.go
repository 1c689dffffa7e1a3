// Package server serves an OCI distribution registry over TLS on several
// addresses at once, with filesystem storage (hack/tools/registry).
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

// Options say where the registry keeps its data, its TLS key pair and
// the addresses it serves on.
type Options struct {
	Root, Cert, Key string
	Listen          []string
	// LogLevel is logrus's level for the registry's log (default warn;
	// every HEAD of a blob not yet pushed is logged as an error).
	LogLevel string
}

// Validate says what is missing from o.
func (o Options) Validate() error {
	switch {
	case o.Root == "":
		return errors.New("-root is required")
	case o.Cert == "" || o.Key == "":
		return errors.New("-cert and -key are required: the registry serves TLS only")
	case len(o.Listen) == 0:
		return errors.New("at least one -listen address is required")
	}
	return nil
}

// config is the registry's configuration: filesystem storage below root,
// deletes allowed (make local-load replaces tags), no authentication.
func config(root string) *configuration.Configuration {
	c := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem": configuration.Parameters{"rootdirectory": root},
			"delete":     configuration.Parameters{"enabled": true},
			"cache":      configuration.Parameters{"blobdescriptor": "inmemory"},
		},
	}
	c.Log.AccessLog.Disabled = true
	return c
}

// Serve runs the registry on every address of o until ctx ends or one
// listener fails.
func Serve(ctx context.Context, o Options) error {
	var ls []net.Listener
	for _, addr := range o.Listen {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range ls {
				_ = l.Close()
			}
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		ls = append(ls, l)
	}
	return ServeOn(ctx, o, ls)
}

// ServeOn runs the registry on the given listeners (o.Listen unused) until
// ctx ends or one of them fails.
func ServeOn(ctx context.Context, o Options, ls []net.Listener) error {
	cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	level, err := logrus.ParseLevel(cmp.Or(o.LogLevel, "warn"))
	if err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	logrus.SetLevel(level)
	srv := &http.Server{
		Handler:           handlers.NewApp(ctx, config(o.Root)),
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	errs := make(chan error, len(ls))
	for _, l := range ls {
		go func() { errs <- srv.ServeTLS(l, "", "") }()
	}
	fmt.Fprintf(os.Stderr, "registry: serving %s on %d address(es)\n", o.Root, len(ls))
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
