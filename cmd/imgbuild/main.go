// Command imgbuild assembles container images without `docker build`:
//
//	imgbuild image   --tag REF --out FILE [--layer FILE]... [--rootfs-tar TAR]... [--add SRC:DST[:MODE]]...
//	                 [--entrypoint A,B] [--cmd A,B] [--env K=V]... [--stopsignal SIG] [--workdir DIR] [--user UID[:GID]]
//	imgbuild layer   --out FILE TAR
//	imgbuild archive --out FILE IMAGE.tar...
//
// `image` writes a docker-loadable archive (layers: each --layer in order,
// each rootfs tar in order, then one layer with the --add files). `layer`
// compresses a root filesystem once, for every image built on it. `archive`
// merges single-image archives into one multi-image archive whose
// `repositories` entry comes first, which is the form `kind build
// node-image` reads image tags from.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "imgbuild:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage:
  imgbuild image   --tag REF --out FILE [--layer FILE]... [--rootfs-tar TAR]... [--add SRC:DST[:MODE]]... [--entrypoint A,B] [--cmd A,B] [--env K=V]... [--stopsignal SIG] [--workdir DIR] [--user UID[:GID]]
  imgbuild layer   --out FILE TAR
  imgbuild archive --out FILE IMAGE.tar...`

func run(args []string, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, usage)
		if len(args) == 0 {
			return errors.New("missing subcommand")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "image":
		return runImage(args[1:], stderr)
	case "layer":
		return runLayer(args[1:], stderr)
	case "archive":
		return runArchive(args[1:], stderr)
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func runImage(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var spec imageSpec
	var adds, envs listFlag
	var entrypoint, cmd string
	fs.StringVar(&spec.Tag, "tag", "", "image reference to tag the archive with (required)")
	fs.StringVar(&spec.Out, "out", "", "output archive path (required)")
	fs.Var((*listFlag)(&spec.Layers), "layer", "a layer made by `imgbuild layer`, below the --rootfs-tar ones (repeatable)")
	fs.Var((*listFlag)(&spec.RootfsTars), "rootfs-tar", "uncompressed tar of a root filesystem, one layer each (repeatable)")
	fs.Var(&adds, "add", "SRC:DST[:MODE] file to add in the final layer (repeatable, MODE octal, default 0755)")
	fs.StringVar(&entrypoint, "entrypoint", "", "comma-separated entrypoint")
	fs.StringVar(&cmd, "cmd", "", "comma-separated cmd")
	fs.Var(&envs, "env", "K=V environment entry (repeatable)")
	fs.StringVar(&spec.StopSignal, "stopsignal", "", "stop signal, e.g. SIGRTMIN+3")
	fs.StringVar(&spec.WorkingDir, "workdir", "", "working directory")
	fs.StringVar(&spec.User, "user", "", "user to run as, e.g. 65532:65532 (numeric: the image may have no /etc/passwd)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	spec.Entrypoint, spec.Cmd, spec.Env = splitList(entrypoint), splitList(cmd), envs
	for _, a := range adds {
		f, err := parseAdd(a)
		if err != nil {
			return err
		}
		spec.Files = append(spec.Files, f)
	}
	if err := spec.validate(); err != nil {
		return err
	}
	return buildImage(spec)
}

func runArchive(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output archive path (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return errors.New("archive needs --out and at least one input archive")
	}
	return mergeArchives(*out, fs.Args())
}
