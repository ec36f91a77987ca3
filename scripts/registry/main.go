// Command registry is a plain-HTTP OCI registry on the local filesystem,
// built from github.com/distribution/distribution/v3 (the project behind
// the "registry" image). scripts/test-registry.sh runs it so the kind nodes
// can pull the suite's images the way a real cluster does.
//
//	registry --addr HOST:PORT --root DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5000", "address to listen on (plain HTTP)")
	root := flag.String("root", "", "directory for the registry's blobs and manifests (required)")
	flag.Parse()
	if *root == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: registry --addr HOST:PORT --root DIR")
		os.Exit(2)
	}
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem": configuration.Parameters{"rootdirectory": *root},
			"delete":     configuration.Parameters{"enabled": false},
		},
	}
	cfg.HTTP.Addr = *addr
	cfg.Log.Level = "info"
	cfg.Log.AccessLog.Disabled = false
	reg, err := registry.NewRegistry(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	if err := reg.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}
