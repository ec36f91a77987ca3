package lib_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// helpRE is how a script prints its header comment for --help: lines 2 to N.
var helpRE = regexp.MustCompile(`sed -n '2,([0-9]+)p' "\$0"`)

// headerProblem says what is wrong with a script's --help range, or "": it
// must cover the whole header comment, lines 2 to the last of the comment
// block that opens the file, and nothing after it. A script whose header
// grew by a line and whose N did not printed half a sentence, or the
// `set -euo pipefail` below it.
func headerProblem(src string) string {
	m := helpRE.FindStringSubmatch(src)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(src, "\n")
	end := 1 // the last header line, 1-based
	for end < len(lines) && strings.HasPrefix(lines[end], "#") {
		end++
	}
	if n != end {
		return fmt.Sprintf("--help prints lines 2-%d, the header comment is lines 2-%d", n, end)
	}
	return ""
}

func TestHelpPrintsTheWholeHeader(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "*.sh").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	checked := 0
	for _, f := range strings.Fields(string(out)) {
		b, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		if helpRE.Match(b) {
			checked++
		}
		if p := headerProblem(string(b)); p != "" {
			t.Errorf("%s: %s", f, p)
		}
	}
	if checked < 10 {
		t.Fatalf("found only %d scripts with a --help header; is the pattern still %s?", checked, helpRE)
	}
}

// The check itself: a header one line longer or shorter than the range.
func TestHeaderProblem(t *testing.T) {
	script := func(n int, header ...string) string {
		return "#!/usr/bin/env bash\n" + strings.Join(header, "\n") + "\nset -euo pipefail\n" +
			fmt.Sprintf("-h | --help) sed -n '2,%dp' \"$0\" ;;\n", n)
	}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{script(3, "# a", "# b"), false},
		{script(2, "# a", "# b"), true}, // the last line left out
		{script(4, "# a", "# b"), true}, // set -euo pipefail printed
		{script(4, "# a", "#", "# c"), false},
		{"#!/bin/sh\necho no help\n", false},
	} {
		if got := headerProblem(c.src) != ""; got != c.want {
			t.Errorf("headerProblem(%q) found a problem: %v, want %v", c.src, got, c.want)
		}
	}
}
