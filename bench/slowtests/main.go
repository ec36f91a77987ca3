// Command slowtests prints the slowest tests and packages of `make test`
// from the go test -json files scripts/go-test.sh keeps
// (reports/test-times/*.json): where the time of make test goes.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// event is the part of a test2json event read here.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

type timing struct {
	area, pkg, test string
	seconds         float64
}

func main() {
	n := flag.Int("n", 20, "how many tests to list")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: slowtests [-n N] FILE.json...\n\nThe N slowest tests (top-level: a subtest's time is in its parent's) and every package, slowest first.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var tests, pkgs []timing
	for _, f := range flag.Args() {
		t, p, err := read(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "slowtests: %v\n", err)
			os.Exit(1)
		}
		tests, pkgs = append(tests, t...), append(pkgs, p...)
	}
	slowest := func(ts []timing) {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].seconds > ts[j].seconds })
	}
	slowest(tests)
	slowest(pkgs)
	fmt.Printf("%d slowest tests of %d:\n", min(*n, len(tests)), len(tests))
	for _, t := range tests[:min(*n, len(tests))] {
		fmt.Printf("%8.1fs  %-12s %s %s\n", t.seconds, t.area, strings.TrimPrefix(t.pkg, "github.com/fencecheck/fencecheck/"), t.test)
	}
	total := 0.0
	for _, p := range pkgs {
		total += p.seconds
	}
	fmt.Printf("packages (%d, %.0fs summed; packages of one area run two at a time, unit four):\n", len(pkgs), total)
	for _, p := range pkgs {
		if p.seconds >= 1 {
			fmt.Printf("%8.1fs  %-12s %s\n", p.seconds, p.area, strings.TrimPrefix(p.pkg, "github.com/fencecheck/fencecheck/"))
		}
	}
}

// read returns the top-level tests and the packages that ended in file.
func read(file string) (tests, pkgs []timing, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	area := strings.TrimSuffix(filepath.Base(file), ".json")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: not a go test -json event: %v", file, line, err)
		}
		if e.Action != "pass" && e.Action != "fail" {
			continue
		}
		switch {
		case e.Test == "":
			pkgs = append(pkgs, timing{area, e.Package, "", e.Elapsed})
		case !strings.Contains(e.Test, "/"):
			tests = append(tests, timing{area, e.Package, e.Test, e.Elapsed})
		}
	}
	return tests, pkgs, sc.Err()
}
