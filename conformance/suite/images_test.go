//go:build conformance

package suite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/internal/images"
)

// Images from a registry (--image-repo): the suite pushes the archives
// scripts/images.sh built and every pod it creates runs them by digest, so
// a cluster that only pulls (no kind load) runs the suite.
var (
	imageRepo     = flag.String("image-repo", "", "REGISTRY/PATH: push the suite's images there and run them by digest (default: the kind-loaded fencecheck/*:dev)")
	imageArchives = flag.String("image-archives", "", "directory of the image archives to push (default $FENCECHECK_CACHE/images, where scripts/images.sh writes them)")
	pushImages    = flag.String("push-images", "reconciler,sink,witness,chaos-agent,probe", "comma-separated images to push with --image-repo (NAME.tar in --image-archives)")

	// pushed is what --image-repo pushed (nil without it), for the report.
	pushed images.Map
)

// pushSuiteImages pushes the --push-images archives to --image-repo and
// keeps the Map beside the reports (images.json). Without --image-repo it
// returns nil: nothing is rewritten.
func pushSuiteImages(ctx context.Context, kubeconfig string) (images.Map, error) {
	if *imageRepo == "" {
		return nil, nil
	}
	repo, err := images.ParseRepo(*imageRepo)
	if err != nil {
		return nil, err
	}
	if kubeconfig == "" {
		return nil, fmt.Errorf("--image-repo %s: no cluster to run the pushed images on: pass --kubeconfig too", *imageRepo)
	}
	dir := *imageArchives
	if dir == "" {
		cache := os.Getenv("FENCECHECK_CACHE")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, err
			}
			cache = filepath.Join(home, ".cache", "fencecheck")
		}
		dir = filepath.Join(cache, "images")
	}
	var archives []string
	for _, n := range strings.Split(*pushImages, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		a := filepath.Join(dir, n+".tar")
		if _, err := os.Stat(a); err != nil {
			return nil, fmt.Errorf("--image-repo: image %s: %v (build it: scripts/images.sh --no-load %s)", n, err, n)
		}
		archives = append(archives, a)
	}
	if len(archives) == 0 {
		return nil, fmt.Errorf("--push-images %q names no image", *pushImages)
	}
	m, err := images.Push(ctx, repo, archives, logf)
	if err != nil {
		return nil, fmt.Errorf("--image-repo: %w", err)
	}
	if err := os.MkdirAll(*reportsDir, 0o755); err != nil {
		return nil, err
	}
	if err := m.WriteFile(filepath.Join(*reportsDir, "images.json")); err != nil {
		return nil, err
	}
	return m, nil
}
