// Command nsexec stands in for Chaos Mesh's Rust nsexec helper, which cannot
// be built here (no crates registry). chaos-daemon runs every network
// command as
//
//	nsexec [-l] [-m PATH] [-p PATH] [-n PATH] [-i PATH] [-u PATH] -- CMD ARGS...
//
// and this shim takes the same flags: it enters each namespace with setns
// on a locked OS thread, then execs CMD from that thread (a pid namespace
// applies to children only, so with -p it forks CMD and waits instead).
//
// Mount and user namespaces (-m, used with -l by IOChaos, BlockChaos and
// DNSChaos; -U, used by none) are refused with an error: setns into them
// needs a single-threaded process, which a Go program never is. -l alone
// is accepted and changes nothing here (CMD is always resolved in our own
// mount namespace). NetworkChaos (ipset, iptables, tc) uses only -n, and
// HTTPChaos -p and -n.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsFlag maps nsexec's flags to setns namespace types, in the order they are
// entered (user first: it grants the rights for the others).
var nsFlags = []struct {
	flag string
	kind int
	name string
}{
	{"-U", unix.CLONE_NEWUSER, "user"},
	{"-i", unix.CLONE_NEWIPC, "ipc"},
	{"-u", unix.CLONE_NEWUTS, "uts"},
	{"-n", unix.CLONE_NEWNET, "net"},
	{"-p", unix.CLONE_NEWPID, "pid"},
	{"-m", unix.CLONE_NEWNS, "mnt"},
}

// invocation is a parsed command line.
type invocation struct {
	ns    map[string]string // flag → namespace file
	local bool              // -l: keep the caller's mount namespace for CMD's binary
	argv  []string
}

func parse(args []string) (invocation, error) {
	inv := invocation{ns: map[string]string{}}
	known := map[string]bool{}
	for _, f := range nsFlags {
		known[f.flag] = true
	}
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			if len(args) == 0 {
				return inv, errors.New("no command after --")
			}
			inv.argv = args
			return inv, nil
		case a == "-l" || a == "--local":
			inv.local = true
		case known[a]:
			if len(args) == 0 || args[0] == "--" {
				return inv, fmt.Errorf("%s needs a namespace file", a)
			}
			if _, dup := inv.ns[a]; dup {
				return inv, fmt.Errorf("%s given twice", a)
			}
			inv.ns[a] = args[0]
			args = args[1:]
		default:
			return inv, fmt.Errorf("unknown argument %q (want [-l] [-m|-p|-n|-i|-u|-U PATH]... -- CMD ARGS...)", a)
		}
	}
	return inv, errors.New("missing -- CMD")
}

func main() {
	inv, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nsexec:", err)
		os.Exit(2)
	}
	os.Exit(run(inv))
}

func run(inv invocation) int {
	for _, f := range []string{"-m", "-U"} {
		if _, ok := inv.ns[f]; ok {
			fmt.Fprintf(os.Stderr, "nsexec: %s is not supported by this Go shim: setns into mount and user namespaces needs a single-threaded process\n", f)
			return 2
		}
	}
	// Resolve CMD before entering any namespace: it comes from our image.
	path, err := exec.LookPath(inv.argv[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nsexec:", err)
		return 127
	}
	// Namespaces belong to the thread: stay on it until exec or fork.
	runtime.LockOSThread()
	for _, f := range nsFlags {
		file, ok := inv.ns[f.flag]
		if !ok {
			continue
		}
		if err := enter(file, f.kind); err != nil {
			fmt.Fprintf(os.Stderr, "nsexec: enter %s namespace %s: %v\n", f.name, file, err)
			return 1
		}
	}
	if _, ok := inv.ns["-p"]; !ok {
		err := syscall.Exec(path, inv.argv, os.Environ())
		fmt.Fprintf(os.Stderr, "nsexec: exec %s: %v\n", path, err)
		return 126
	}
	return forkWait(path, inv.argv)
}

func enter(file string, kind int) error {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Setns(fd, kind)
}

// forkWait runs CMD as a child (it is the one that lands in the pid
// namespace), passes on signals and exits with its status.
func forkWait(path string, argv []string) int {
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "nsexec: start %s: %v\n", path, err)
		return 126
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "nsexec: wait %s: %v\n", path, err)
	return 1
}
