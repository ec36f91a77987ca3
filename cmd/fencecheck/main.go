// Command fencecheck is the harness's command line: certify a sink against
// the sink contract, re-check a recorded run offline, and more. Each
// subcommand lives in its own file and registers itself in commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
)

// command is one subcommand: run gets the arguments after its name and
// returns the process exit code.
type command struct {
	summary string
	run     func(args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: fencecheck <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nrun 'fencecheck <command> --help' for a command's flags")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "fencecheck: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	os.Exit(c.run(os.Args[2:]))
}

// parseArgs parses a subcommand's flags and checks that exactly positional
// arguments follow. When ok is false the subcommand returns code: 0 after
// --help, 2 on bad usage (the reason has been printed).
func parseArgs(fs *flag.FlagSet, args []string, positional int) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() != positional {
		fmt.Fprintf(fs.Output(), "%s: want %d argument(s), got %q\n\n", fs.Name(), positional, fs.Args())
		fs.Usage()
		return 2, false
	}
	return 0, true
}
