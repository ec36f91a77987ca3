// Command buildprofile reads the action graph that `go build
// -debug-actiongraph=FILE` writes and says where a build's wall time went:
// compile time per module (by path prefix), the compile time only one
// command needs, each link, the tail after the last compile, the shortest
// wall the CPU work allows on N cores, and the chain of actions that set the
// wall time. It is how
// the cold node build (scripts/k8s-bins.sh) is measured; bench/node-build.sh
// runs that build with the graph and calls this.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

func main() {
	top := flag.Int("top", 15, "how many modules to list")
	cores := flag.Int("cores", runtime.NumCPU(), "cores the build had (for the CPU floor)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: buildprofile [--top N] [--cores N] ACTIONGRAPH.json\n\n"+
			"Summarizes the action graph of `go build -debug-actiongraph=FILE`.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *cores < 1 || *top < 0 {
		flag.Usage()
		os.Exit(2)
	}
	acts, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildprofile:", err)
		os.Exit(1)
	}
	p, err := Summarize(acts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "buildprofile: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	p.Cores = *cores
	p.Write(os.Stdout, *top)
}

// Action is the part of cmd/go's actionJSON this needs.
type Action struct {
	ID        int
	Mode      string
	Package   string
	Deps      []int
	Target    string
	TimeStart time.Time
	TimeDone  time.Time
	CmdReal   time.Duration
	CmdUser   time.Duration
	CmdSys    time.Duration
}

func (a Action) ran() bool { return !a.TimeStart.IsZero() && !a.TimeDone.IsZero() }
func (a Action) span() time.Duration {
	if !a.ran() {
		return 0
	}
	return a.TimeDone.Sub(a.TimeStart)
}

func load(path string) ([]Action, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var acts []Action
	if err := json.Unmarshal(b, &acts); err != nil {
		return nil, fmt.Errorf("%s: not an action graph: %w", path, err)
	}
	return acts, nil
}

// Profile is where a build's time went.
type Profile struct {
	Wall         time.Duration // first start to last done
	Compiles     int           // packages compiled (mode build, ran)
	CompileCPU   time.Duration // user+sys of the compiler and assembler runs
	LastCompile  time.Duration // from the start to the last compile done
	Modules      []Share       // compile CPU per module prefix, most first
	Links        []Share       // each link, by wall span, longest first
	LinkCPU      time.Duration // user+sys of every link
	Only         []Share       // per command: compile CPU no other command needs
	CriticalPath []Share       // the dependency chain ending last, first to last
	Cores        int           // for the CPU floor in Write; 0 leaves it out
}

// Share is one named slice of time.
type Share struct {
	Name string
	Time time.Duration
}

// Summarize computes the profile; an empty graph or one where nothing ran
// (a fully cached build) is an error, not a zero profile.
func Summarize(acts []Action) (Profile, error) {
	var p Profile
	byID := make(map[int]Action, len(acts))
	var first, last time.Time
	var lastAct Action
	mods := map[string]time.Duration{}
	var lastCompile time.Time
	for _, a := range acts {
		byID[a.ID] = a
		if !a.ran() {
			continue
		}
		if first.IsZero() || a.TimeStart.Before(first) {
			first = a.TimeStart
		}
		if a.TimeDone.After(last) {
			last, lastAct = a.TimeDone, a
		}
		cpu := a.CmdUser + a.CmdSys
		switch a.Mode {
		case "build":
			if cpu == 0 { // cached: nothing compiled
				continue
			}
			p.Compiles++
			p.CompileCPU += cpu
			mods[modulePrefix(a.Package)] += cpu
			if a.TimeDone.After(lastCompile) {
				lastCompile = a.TimeDone
			}
		case "link":
			p.LinkCPU += cpu
			p.Links = append(p.Links, Share{binaryName(a), a.span()})
		}
	}
	if last.IsZero() {
		return p, fmt.Errorf("no action ran (%d actions): a cached build says nothing", len(acts))
	}
	p.Wall = last.Sub(first)
	if !lastCompile.IsZero() {
		p.LastCompile = lastCompile.Sub(first)
	}
	for m, d := range mods {
		p.Modules = append(p.Modules, Share{m, d})
	}
	sortShares(p.Modules)
	sortShares(p.Links)
	p.Only = onlyOne(byID, acts)
	sortShares(p.Only)
	p.CriticalPath = criticalPath(byID, lastAct)
	return p, nil
}

// onlyOne: for each link, the compile CPU of the packages no other link
// reaches, which is what leaving that command out of the build would save.
func onlyOne(byID map[int]Action, acts []Action) []Share {
	users := map[int][]string{} // build action -> the links that reach it
	var links []string
	for _, l := range acts {
		if l.Mode != "link" {
			continue
		}
		name := binaryName(l)
		links = append(links, name)
		seen := map[int]bool{}
		stack := append([]int(nil), l.Deps...)
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			a, ok := byID[id]
			if !ok || seen[id] || a.Mode != "build" {
				continue
			}
			seen[id] = true
			users[id] = append(users[id], name)
			stack = append(stack, a.Deps...)
		}
	}
	only := map[string]time.Duration{}
	for id, us := range users {
		if len(us) == 1 {
			a := byID[id]
			only[us[0]] += a.CmdUser + a.CmdSys
		}
	}
	out := make([]Share, 0, len(links))
	for _, n := range links {
		out = append(out, Share{n, only[n]})
	}
	return out
}

// criticalPath walks back from the action that ended last, each time to
// the dependency that finished last: the chain the wall time waited on.
func criticalPath(byID map[int]Action, end Action) []Share {
	var chain []Share
	seen := map[int]bool{}
	for a := end; ; {
		seen[a.ID] = true
		if a.span() > 0 {
			chain = append(chain, Share{a.Mode + " " + a.Package, a.span()})
		}
		var next Action
		found := false
		for _, id := range a.Deps {
			d, ok := byID[id]
			if ok && !seen[id] && d.ran() && (!found || d.TimeDone.After(next.TimeDone)) {
				next, found = d, true
			}
		}
		if !found {
			break
		}
		a = next
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}

func sortShares(s []Share) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Time != s[j].Time {
			return s[i].Time > s[j].Time
		}
		return s[i].Name < s[j].Name
	})
}

// modulePrefix names the module a package most likely belongs to from its
// path alone: the standard library, host/owner/repo for code hosts,
// host/repo for vanity hosts (k8s.io/client-go, go.etcd.io/etcd).
func modulePrefix(pkg string) string {
	parts := strings.Split(pkg, "/")
	if !strings.Contains(parts[0], ".") {
		return "std"
	}
	n := 2
	switch parts[0] {
	case "github.com", "gitlab.com", "bitbucket.org", "golang.org":
		n = 3
	}
	if len(parts) < n {
		n = len(parts)
	}
	return strings.Join(parts[:n], "/")
}

// binaryName: the link's output file, or its package when it has none.
func binaryName(a Action) string {
	if a.Target != "" {
		t := a.Target
		if i := strings.LastIndex(t, "/"); i >= 0 {
			t = t[i+1:]
		}
		if t != "a.out" && t != "" {
			return t
		}
	}
	return a.Package
}

// Write prints the profile as a short report.
func (p Profile) Write(w io.Writer, top int) {
	s := func(d time.Duration) string { return d.Round(time.Second).String() }
	fmt.Fprintf(w, "wall %s; %d packages compiled, compiler CPU %s (%.2f cores busy on average until the last compile at %s)\n",
		s(p.Wall), p.Compiles, s(p.CompileCPU), float64(p.CompileCPU)/float64(max(p.LastCompile, time.Second)), s(p.LastCompile))
	fmt.Fprintf(w, "tail after the last compile: %s; link CPU %s over %d links\n", s(p.Wall-p.LastCompile), s(p.LinkCPU), len(p.Links))
	if p.Cores > 0 {
		floor := (p.CompileCPU + p.LinkCPU) / time.Duration(p.Cores)
		fmt.Fprintf(w, "CPU floor on %d cores: %s (compile + link CPU / cores); the wall is %.2fx it\n",
			p.Cores, s(floor), float64(p.Wall)/float64(max(floor, 1)))
	}
	fmt.Fprintf(w, "\ncompile CPU by module (path prefix):\n")
	for i, m := range p.Modules {
		if i == top {
			fmt.Fprintf(w, "  ... %d more\n", len(p.Modules)-top)
			break
		}
		fmt.Fprintf(w, "  %8s %5.1f%%  %s\n", s(m.Time), 100*float64(m.Time)/float64(max(p.CompileCPU, 1)), m.Name)
	}
	fmt.Fprintf(w, "\ncompile CPU only one command needs (what leaving it out saves):\n")
	for _, o := range p.Only {
		fmt.Fprintf(w, "  %8s  %s\n", s(o.Time), o.Name)
	}
	fmt.Fprintf(w, "\nlinks (wall span):\n")
	for _, l := range p.Links {
		fmt.Fprintf(w, "  %8s  %s\n", s(l.Time), l.Name)
	}
	fmt.Fprintf(w, "\ncritical path (%d actions, first to last; the longest 10):\n", len(p.CriticalPath))
	longest := append([]Share(nil), p.CriticalPath...)
	sortShares(longest)
	if len(longest) > 10 {
		longest = longest[:10]
	}
	var sum time.Duration
	for _, c := range p.CriticalPath {
		sum += c.Time
	}
	for _, c := range longest {
		fmt.Fprintf(w, "  %8s  %s\n", s(c.Time), c.Name)
	}
	fmt.Fprintf(w, "  sum of the path's spans: %s of %s wall\n", s(sum), s(p.Wall))
	if sum < p.Wall/2 {
		// Actions started late for want of a core, not for a dependency.
		fmt.Fprintf(w, "  (under half the wall: the build waited on cores, not on a dependency chain)\n")
	}
}
