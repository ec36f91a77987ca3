// Package importrules holds the test that enforces the import rules of
// docs/architecture.md ("Who may import whom"): the table there is read
// and checked against `go list -deps`, code and tests alike.
package importrules

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fencecheck/fencecheck"

// rule is one row of the table: packages matching from never import
// anything matching never, in their code, and in their tests too when
// tests is set (but for the packages in exempt).
type rule struct {
	line        int
	from, never []string
	tests       bool
	exempt      []string
	why         string
}

var codeRE = regexp.MustCompile("`([^`]+)`")

// readRules reads the table under "## Who may import whom".
func readRules(doc []byte) ([]rule, error) {
	var out []rule
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Who may import whom"
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 4 {
				return nil, fmt.Errorf("architecture.md:%d: a rule row has 4 cells, not %d", n, len(cells))
			}
			in := strings.TrimSpace(cells[2])
			r := rule{line: n, tests: strings.HasPrefix(in, "code and tests"), why: strings.TrimSpace(cells[3])}
			if !r.tests && in != "code" {
				return nil, fmt.Errorf("architecture.md:%d: the third cell says \"code\" or \"code and tests\", not %q", n, in)
			}
			for _, m := range codeRE.FindAllStringSubmatch(in, -1) {
				r.exempt = append(r.exempt, m[1])
			}
			for _, m := range codeRE.FindAllStringSubmatch(cells[0], -1) {
				r.from = append(r.from, m[1])
			}
			for _, m := range codeRE.FindAllStringSubmatch(cells[1], -1) {
				r.never = append(r.never, m[1])
			}
			if len(r.from) == 0 || len(r.never) == 0 {
				return nil, fmt.Errorf("architecture.md:%d: a rule row names no package or nothing forbidden", n)
			}
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// matches: path is pattern (module-relative for ours, full otherwise), or
// below it for a pattern ending in /...
func matches(pattern, path string) bool {
	full := pattern
	if !strings.Contains(strings.SplitN(pattern, "/", 2)[0], ".") && !isStd(pattern) {
		full = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(full, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == full
}

// isStd: a standard-library pattern (net/http).
func isStd(p string) bool {
	first := strings.SplitN(p, "/", 2)[0]
	return slices.Contains([]string{"net", "os", "crypto", "encoding", "io"}, first)
}

// graph is every package's imports, from go list.
type graph struct {
	deps  map[string][]string // a package's transitive dependencies
	tests map[string][]string // its tests' direct imports
}

func load(t *testing.T, root string) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "-tags", "integration,conformance,cluster",
		"-f", "{{.ImportPath}}|{{join .Deps \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{deps: map[string][]string{}, tests: map[string][]string{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		path := parts[0]
		if strings.Contains(path, " [") || strings.HasSuffix(path, ".test") {
			continue // a test variant: its imports are read from TestImports
		}
		g.deps[path] = strings.Fields(parts[1])
		g.tests[path] = strings.Fields(parts[2])
	}
	return g
}

// reach is everything pkg's code (and its tests, with tests) imports,
// directly or not.
func (g graph) reach(pkg string, tests bool) map[string]string {
	out := map[string]string{} // import -> through which
	for _, d := range g.deps[pkg] {
		out[d] = pkg
	}
	if !tests {
		return out
	}
	for _, ti := range g.tests[pkg] {
		if ti == pkg {
			continue
		}
		if _, ok := out[ti]; !ok {
			out[ti] = pkg + " (tests)"
		}
		for _, d := range g.deps[ti] {
			if _, ok := out[d]; !ok {
				out[d] = ti + " (imported by " + pkg + "'s tests)"
			}
		}
	}
	return out
}

// violations lists every import against rules.
func violations(rules []rule, g graph) []string {
	var out []string
	for _, r := range rules {
		for pkg := range g.deps {
			if !strings.HasPrefix(pkg, module) || !slices.ContainsFunc(r.from, func(p string) bool { return matches(p, pkg) }) {
				continue
			}
			tests := r.tests && !slices.ContainsFunc(r.exempt, func(p string) bool { return matches(p, pkg) })
			for imp, via := range g.reach(pkg, tests) {
				for _, n := range r.never {
					if matches(n, imp) {
						out = append(out, fmt.Sprintf("architecture.md:%d: %s imports %s (via %s): %s", r.line, strings.TrimPrefix(pkg, module+"/"), imp, via, r.why))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestImportRules(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := readRules(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 5 {
		t.Fatalf("%d rules read from docs/architecture.md: the table is gone or unreadable", len(rules))
	}
	g := load(t, root)
	// Every package a rule names exists, so a renamed package does not
	// drop out of its rule unseen.
	for _, r := range rules {
		for _, p := range r.from {
			found := false
			for pkg := range g.deps {
				found = found || matches(p, pkg)
			}
			if !found {
				t.Errorf("architecture.md:%d: no package %s", r.line, p)
			}
		}
	}
	for _, v := range violations(rules, g) {
		t.Error(v)
	}
}

// The rules catch what they forbid: a pure package with net/http in its
// dependencies, and a fixture whose test imports the harness (but for
// an exempt one).
func TestViolationsAreFound(t *testing.T) {
	rules := []rule{{line: 1, from: []string{"conformance/check"}, never: []string{"net/http"}, why: "pure"},
		{line: 2, from: []string{"fixtures/..."}, never: []string{"conformance/..."}, tests: true, exempt: []string{"fixtures/reconciler"}, why: "under test"}}
	g := graph{deps: map[string][]string{
		module + "/conformance/check":    {"fmt", "net/http"},
		module + "/fixtures/sink":        {"fmt"},
		module + "/conformance/history":  {"fmt"},
		module + "/fixtures/sink/broken": {"fmt"},
		module + "/fixtures/reconciler":  {"fmt"},
	}, tests: map[string][]string{module + "/fixtures/sink": {module + "/conformance/history"},
		module + "/fixtures/reconciler": {module + "/conformance/history"}}}
	v := violations(rules, g)
	if len(v) != 2 || !strings.Contains(v[0], "conformance/check imports net/http") || !strings.Contains(v[1], "fixtures/sink imports "+module+"/conformance/history") {
		t.Errorf("violations %q", v)
	}
}
