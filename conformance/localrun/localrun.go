// Package localrun runs conformance scenarios on the local target from
// nothing but this module and etcd + kube-apiserver binaries: it builds the
// sink, witness and reconciler, starts the apiserver, runs the suite and
// writes the reports. `fencecheck run --target local` and the local
// integration test (conformance/local) share it, so the user mode is the
// tested one.
package localrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/collect"
	"github.com/fencecheck/fencecheck/conformance/driver"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/scenario"
	"github.com/fencecheck/fencecheck/conformance/target/local"
	"github.com/fencecheck/fencecheck/internal/kubetest"
)

// commands are what the local target runs as processes.
var commands = []string{"sink", "witness", "reconciler"}

// Options are one local run.
type Options struct {
	// Defs are the scenarios.
	Defs []scenario.Def
	// Suite is what RunSuite gets (Config, Meta, Judged, Reports,
	// Parallel and QuietGate), as given.
	Suite driver.Options
	// BinDir holds the commands already built; "" builds them from this module.
	BinDir string
	// KubeBinDir holds etcd and kube-apiserver ("" : kubetest.BinDir()).
	KubeBinDir string
	// Work holds the built binaries, each scenario's data and logs.
	Work string
	Logf func(format string, a ...any)
}

// Run builds what is missing, starts etcd and kube-apiserver, runs the
// scenarios and stops the apiserver. A setup failure is an error with no
// run; a run's own error is RunSuite's.
func Run(ctx context.Context, o Options) (*history.Run, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bins := o.BinDir
	if bins == "" {
		bins = filepath.Join(o.Work, "bin")
		logf("building %s (go build) ...", strings.Join(commands, ", "))
		if err := build(ctx, bins); err != nil {
			return nil, err
		}
	}
	for _, b := range commands {
		if fi, err := os.Stat(filepath.Join(bins, b)); err != nil || fi.IsDir() {
			return nil, fmt.Errorf("%s has no %s binary", bins, b)
		}
	}
	logf("starting etcd and kube-apiserver ...")
	api, err := kubetest.StartE(kubetest.Options{BinDir: o.KubeBinDir, Log: logf})
	if err != nil {
		return nil, err
	}
	defer api.Stop()
	kube := kubernetes.NewForConfigOrDie(api.Config)
	target := local.New(local.Options{Kube: kube, APIServer: "127.0.0.1:" + strconv.Itoa(api.Port),
		Kubeconfig: api.Kubeconfig, SinkBin: filepath.Join(bins, "sink"), WitnessBin: filepath.Join(bins, "witness"),
		ReconcilerBin: filepath.Join(bins, "reconciler"), Dir: o.Work, Logf: logf})
	opts := o.Suite
	versions, err := collect.ClusterVersions(ctx, kube)
	if err != nil {
		return nil, err
	}
	opts.Meta.Versions = maps.Clone(opts.Meta.Versions)
	if opts.Meta.Versions == nil {
		opts.Meta.Versions = map[string]string{}
	}
	maps.Copy(opts.Meta.Versions, versions)
	opts.Meta.Versions["go"] = runtime.Version()
	opts.Meta.Versions["target"] = target.Name()
	return driver.RunSuite(ctx, target, o.Defs, opts)
}

// build builds the commands from this module into dir, in one go build (shared
// packages compile once).
func build(ctx context.Context, dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, b := range commands {
		args = append(args, "./cmd/"+b)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, out)
	}
	return nil
}

// moduleRoot is the directory of this module's go.mod, from the working
// directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/fencecheck/fencecheck\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("not inside the fencecheck module: run from the repository, or give the built sink, witness and reconciler (--bin-dir)")
		}
	}
}
