// Command runc-wrapper is registered as dockerd's default runtime on hosts
// whose capability bounding set lacks some capabilities (CAP_SYS_RESOURCE on
// the Firecracker VMs this project runs on). `docker run --privileged` asks
// for every capability and runc then fails with "unable to apply caps".
// For create/run (bundle config.json) and exec --process (process JSON) it
// drops every capability this process's own bounding set lacks, then execs
// the real runc with the same arguments. On ordinary hosts it drops nothing.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// candidates for the real runc, first existing wins (override: FENCECHECK_REAL_RUNC).
var realRuncPaths = []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"}

func main() {
	args := os.Args[1:]
	if err := filterForCommand(args); err != nil {
		fmt.Fprintf(os.Stderr, "runc-wrapper: %v\n", err)
		os.Exit(1)
	}
	real := os.Getenv("FENCECHECK_REAL_RUNC")
	if real == "" {
		for _, p := range realRuncPaths {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				real = p
				break
			}
		}
	}
	if real == "" {
		fmt.Fprintln(os.Stderr, "runc-wrapper: no real runc found (install the runc package)")
		os.Exit(1)
	}
	err := syscall.Exec(real, append([]string{"runc"}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-wrapper: exec %s: %v\n", real, err)
	os.Exit(1)
}

// filterForCommand edits the spec file the runc invocation will read.
func filterForCommand(args []string) error {
	inv := parseInvocation(args)
	var file string
	var isProcess bool
	switch inv.command {
	case "create", "run":
		bundle := inv.bundle
		if bundle == "" {
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			bundle = wd
		}
		file = filepath.Join(bundle, "config.json")
	case "exec":
		if inv.process == "" {
			return nil
		}
		file, isProcess = inv.process, true
	default:
		return nil
	}
	allowed, err := boundingSet()
	if err != nil {
		return err
	}
	return filterFile(file, isProcess, allowed)
}

func filterFile(file string, isProcess bool, allowed map[string]bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, changed, err := filterSpec(data, isProcess, allowed)
	if err != nil || !changed {
		return err
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, st.Mode().Perm())
}
