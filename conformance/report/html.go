package report

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/conformance/check"
	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/eventlog"
)

var droppedRE = regexp.MustCompile(`\bdropped=(\d+)`)

// termPalette colours terms; red is kept for partitions and rejections.
var termPalette = []string{"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"}

func termColor(t uint64) string {
	if t == 0 {
		return "#444444"
	}
	return termPalette[int((t-1)%uint64(len(termPalette)))]
}

const (
	svgLeft   = 150.0 // lane labels
	svgPlot   = 1000.0
	svgRight  = 30.0
	laneH     = 64.0
	axisH     = 30.0
	legendH   = 76.0
	sinkLaneH = 70.0
)

// outcomeClass is the CSS class of each outcome (bad for every one that is
// not OK).
var outcomeClass = map[check.Outcome]string{check.Pass: "ok", check.Caught: "ctl", check.Informative: "info",
	check.Fail: "bad", check.Escaped: "bad", check.Inconclusive: "bad"}

// HTML renders index.html: the verdicts and one timeline per scenario.
func HTML(run *history.Run, results []check.Result) []byte {
	var b bytes.Buffer
	c := Count(results)
	status, color := "PASSED", "#2e7d32"
	if c.Failed > 0 {
		status, color = "FAILED", "#c62828"
	}
	esc := html.EscapeString
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>fencecheck %s</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1220px}
h1 span{color:%s} table{border-collapse:collapse;margin:8px 0 16px} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3} .ok{color:#2e7d32} .bad{color:#c62828;font-weight:bold} .ctl{color:#6a1b9a} .info{color:#777}
details{margin:0} summary{cursor:pointer} pre{margin:4px 0;white-space:pre-wrap;font-size:12px}
section{border-top:2px solid #ccc;margin-top:24px;padding-top:8px}
</style></head><body>`, esc(run.Meta.RunID), color)
	fmt.Fprintf(&b, "<h1>fencecheck conformance %s: <span>%s</span></h1>\n", esc(run.Meta.RunID), status)
	fmt.Fprintf(&b, "<p>%d results: %d as expected, %d not; %d negative controls caught; %d informative. Seed %d.</p>\n",
		c.Total, c.OK, c.Failed, c.CaughtControls, c.Informative, run.Meta.Seed)
	if v := Versions(run.Meta.Versions); v != "" {
		fmt.Fprintf(&b, "<p>Ran on: %s.</p>\n", esc(v))
	}
	b.WriteString("<table><tr><th>scenario</th><th>results</th><th>as expected</th></tr>\n")
	for _, s := range run.Scenarios {
		var n, ok int
		for _, r := range results {
			if r.Scenario == s.Name {
				n++
				if r.OK {
					ok++
				}
			}
		}
		cls := "ok"
		if ok != n {
			cls = "bad"
		}
		fmt.Fprintf(&b, `<tr><td><a href="#%s">%s</a></td><td>%d</td><td class="%s">%d</td></tr>`+"\n", esc(s.Name), esc(s.Name), n, cls, ok)
	}
	b.WriteString("</table>\n")
	for _, s := range run.Scenarios {
		fmt.Fprintf(&b, `<section id="%s"><h2>%s</h2>`, esc(s.Name), esc(s.Name))
		if s.Description != "" {
			fmt.Fprintf(&b, "<p>%s</p>", esc(s.Description))
		}
		fmt.Fprintf(&b, "<p>Lease %v · renew %v · retry %v · drain_timeout %v · reconciler <code>%s</code> · sink <code>%s</code></p>\n",
			s.Config.LeaseDuration.D(), s.Config.RenewDeadline.D(), s.Config.RetryPeriod.D(), s.Config.DrainTimeout.D(),
			esc(strings.Join(s.Config.ReconcilerArgs, " ")), esc(strings.Join(s.Config.SinkArgs, " ")))
		b.WriteString(Timeline(s))
		b.WriteString("<table><tr><th>check</th><th>expected</th><th>verdict</th><th>evidence</th></tr>\n")
		for _, r := range results {
			if r.Scenario != s.Name {
				continue
			}
			cls := outcomeClass[r.Outcome()]
			first := ""
			if len(r.Evidence) > 0 {
				first = r.Evidence[0]
			}
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td class="%s">%s</td><td><details><summary>%s</summary><pre>%s</pre></details></td></tr>`+"\n",
				esc(r.Check), esc(string(r.Expected)), cls, r.Outcome(), esc(first), esc(strings.Join(r.Evidence, "\n")))
		}
		b.WriteString("</table>\n")
		for _, ch := range s.ExpectChanges {
			fmt.Fprintf(&b, "<p class=\"info\">%s</p>\n", esc(changeText(ch)))
		}
		for _, r := range results {
			if r.Scenario == s.Name && linearizabilityViolated(r) {
				f := esc(check.LinearizabilityFile(s.Name))
				fmt.Fprintf(&b, `<p class="bad">Not linearizable: porcupine's visualization of the history is <a href="%s">%s</a>.</p>`+"\n", f, f)
			}
		}
		if ts, _, _ := check.TakeoverTimes(s); len(ts) > 0 {
			b.WriteString("<table><tr><th>takeover</th><th>cause</th><th>terms</th><th>clock from</th><th>to first commit</th><th>bound</th></tr>\n")
			for _, t := range ts {
				cls := "bad"
				if t.Within() || t.Superseded {
					cls = "ok"
				}
				fmt.Fprintf(&b, `<tr><td>%s → %s</td><td>%s of %s</td><td>%d → %d</td><td>%s</td><td class="%s">%s</td><td>%v</td></tr>`+"\n",
					esc(t.From), esc(t.To), esc(t.Cause), esc(t.CausePod), t.FromTerm, t.ToTerm, t.StartedBy(), cls, esc(tookText(t)), t.Bound.Round(time.Millisecond))
			}
			b.WriteString("</table>\n")
		}
		if len(s.Schedule) > 0 {
			fmt.Fprintf(&b, "<details><summary>fault schedule (replay: the same seed and config give these steps)</summary><pre>%s</pre></details>\n", esc(string(s.Schedule)))
		}
		for _, e := range s.Errors {
			fmt.Fprintf(&b, `<p class="bad">collection problem: %s</p>`, esc(e))
		}
		b.WriteString("</section>\n")
	}
	if len(run.NotRunnable) > 0 {
		fmt.Fprintf(&b, "<section><h2>Not runnable on this target (%d scenarios, no verdict)</h2><ul>\n", len(run.NotRunnable))
		for _, n := range run.NotRunnable {
			fmt.Fprintf(&b, "<li>%s: %s</li>\n", esc(n.Scenario), esc(n.Reason))
		}
		b.WriteString("</ul></section>\n")
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// span is the time range a timeline shows.
func span(s *history.Scenario) (time.Time, time.Time) {
	var lo, hi time.Time
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if hi.IsZero() || t.After(hi) {
			hi = t
		}
	}
	for _, p := range s.Phases {
		see(p.Start)
		see(p.End)
	}
	for _, r := range s.Lease.Records {
		see(r.Observed)
	}
	for _, a := range s.Attempts {
		see(a.Arrived)
	}
	for _, w := range s.Chaos {
		see(w.Injected)
		see(w.Recovered)
	}
	if lo.IsZero() {
		lo = time.Unix(0, 0)
	}
	if !hi.After(lo) {
		hi = lo.Add(time.Second)
	}
	return lo, hi
}

type svg struct {
	b      bytes.Buffer
	lo, hi time.Time
}

func (g *svg) x(t time.Time) float64 {
	f := float64(t.Sub(g.lo)) / float64(g.hi.Sub(g.lo))
	if f < 0 {
		f = 0
	}
	if f > 1 {
		f = 1
	}
	return svgLeft + f*svgPlot
}

func (g *svg) f(format string, a ...any) { fmt.Fprintf(&g.b, format, a...) }

func (g *svg) text(x, y float64, anchor, style, s string) {
	g.f(`<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, style, html.EscapeString(s))
}

// Timeline renders one scenario as an inline SVG: one lane per pod with
// who holds the Lease (coloured by term), what each pod believes, the
// chaos windows shaded, and every sink attempt as a mark on its writer's
// lane; a last lane plots the sink's floor.
func Timeline(s *history.Scenario) string {
	lo, hi := span(s)
	g := &svg{lo: lo, hi: hi}
	pods := s.Pods()
	for _, w := range s.Chaos {
		if _, ok := s.Events[w.Pod]; !ok {
			pods = append(pods, w.Pod)
		}
	}
	sort.Strings(pods)
	laneOf := map[string]int{}
	for i, p := range pods {
		laneOf[p] = i
	}
	terms, kinds := termsUsed(s), kindsUsed(s)
	top := legendH + legendWraps(terms, kinds)*legendRowH + axisH
	height := top + float64(len(pods))*laneH + sinkLaneH + 20
	width := svgLeft + svgPlot + svgRight
	g.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="system-ui,sans-serif" font-size="12">`+"\n", width, height, width, height)
	g.f(`<defs><pattern id="cut" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#fdecea"/><line x1="0" y1="0" x2="0" y2="8" stroke="#e57373" stroke-width="3"/></pattern></defs>` + "\n")
	g.f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")

	g.legend(terms, kinds)

	// Axis with ticks every "nice" step.
	step := niceStep(hi.Sub(lo))
	for d := time.Duration(0); lo.Add(d).Before(hi) || lo.Add(d).Equal(hi); d += step {
		x := g.x(lo.Add(d))
		g.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", x, top-4, x, height-20)
		g.text(x, top-8, "middle", `fill="#555"`, "+"+fmtDur(d))
	}
	g.text(10, top-8, "start", `fill="#555"`, "t0 = "+lo.UTC().Format("15:04:05")+" UTC")

	// Lanes.
	for i, p := range pods {
		y := top + float64(i)*laneH
		fill := "#fafafa"
		if i%2 == 1 {
			fill = "#f2f2f2"
		}
		g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", svgLeft, y, svgPlot, laneH, fill)
		label := p
		if len(label) > 20 { // keep the distinctive suffix of generated pod names
			label = "…" + label[len(label)-18:]
		}
		g.f(`<g><title>%s</title>`, html.EscapeString(p))
		g.text(svgLeft-8, y+22, "end", `font-weight="bold"`, label)
		g.f("</g>\n")
		g.text(svgLeft-8, y+38, "end", `fill="#777" font-size="10"`, "lease · belief")
		g.text(svgLeft-8, y+53, "end", `fill="#777" font-size="10"`, "writes")
	}
	// Chaos windows shade their pod's lane, each kind its own way and
	// labelled; a Lease deletion marks every lane.
	for _, w := range s.Chaos {
		st := styleOf(w.Kind)
		x0, x1 := g.x(w.Injected), g.x(w.Recovered)
		if w.Recovered.IsZero() {
			x1 = svgLeft + svgPlot
		}
		title := fmt.Sprintf("%s of %s %s .. %s", w.Kind, w.Pod, w.Injected.UTC().Format("15:04:05.000"), w.Recovered.UTC().Format("15:04:05.000"))
		if st.AllLanes {
			g.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="5 3"><title>%s</title></line>`+"\n",
				x0, top, x0, top+float64(len(pods))*laneH, st.Color, html.EscapeString(title))
			g.text(x0+3, top+float64(len(pods))*laneH-3, "start", fmt.Sprintf(`fill="%s" font-size="10" font-weight="bold"`, st.Color), st.Label)
			continue
		}
		i, ok := laneOf[w.Pod]
		if !ok {
			continue
		}
		y := top + float64(i)*laneH
		if st.Band {
			g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="6" fill="%s" opacity="%s"><title>%s</title></rect>`+"\n",
				x0, y+1, max(x1-x0, 3), st.Fill, st.Opacity, html.EscapeString(title))
			g.text(x0+4, y+16, "start", fmt.Sprintf(`fill="%s" font-size="10" font-weight="bold"`, st.Color), st.Label)
			continue
		}
		g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="%s"><title>%s</title></rect>`+"\n",
			x0, y+1, max(x1-x0, 3), laneH-2, st.Fill, st.Opacity, html.EscapeString(title))
		g.text(x0+4, y+laneH-3, "start", fmt.Sprintf(`fill="%s" font-size="10" font-weight="bold"`, st.Color), st.Label)
	}
	// Who holds the Lease, per the watch.
	recs := s.Lease.Records
	for i, r := range recs {
		if r.Holder == "" || r.Event == "DELETED" {
			continue
		}
		end := hi
		for j := i + 1; j < len(recs); j++ {
			if recs[j].Holder != r.Holder || recs[j].Term != r.Term || recs[j].Event == "DELETED" {
				end = recs[j].Observed
				break
			}
		}
		if i > 0 && recs[i-1].Holder == r.Holder && recs[i-1].Term == r.Term && recs[i-1].Event != "DELETED" {
			continue // drawn from the first record of this run
		}
		lane, ok := laneOf[check.PodOf(s, r.Holder)]
		if !ok {
			continue
		}
		y := top + float64(lane)*laneH
		x0, x1 := g.x(r.Observed), g.x(end)
		g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="18" rx="3" fill="%s"><title>%s holds term %d from %s</title></rect>`+"\n",
			x0, y+8, max(x1-x0, 2), termColor(r.Term), html.EscapeString(r.Holder), r.Term, r.Observed.UTC().Format("15:04:05.000"))
		if x1-x0 > 50 {
			g.text(x0+5, y+21, "start", `fill="white" font-weight="bold"`, fmt.Sprintf("term %d", r.Term))
		}
	}
	for _, gp := range s.Lease.Gaps {
		x0, x1 := g.x(gp.From), g.x(gp.To)
		g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#000" opacity="0.25"><title>watch gap: %s</title></rect>`+"\n", x0, top, max(x1-x0, 2), float64(len(pods))*laneH, html.EscapeString(gp.Reason))
		g.text(x0+2, top+10, "start", `fill="#000" font-size="10"`, "watch gap")
	}
	// What each pod believes: acquired .. lost/stopped.
	for _, p := range pods {
		y := top + float64(laneOf[p])*laneH
		var from time.Time
		var term uint64
		draw := func(to time.Time) {
			x0, x1 := g.x(from), g.x(to)
			g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="4" fill="%s" opacity="0.8"><title>%s believes it leads with term %d</title></rect>`+"\n", x0, y+30, max(x1-x0, 1), termColor(term), html.EscapeString(p), term)
		}
		for _, ev := range s.Events[p] {
			switch ev.Kind {
			case eventlog.KindAcquired:
				from, term = ev.Time, ev.Epoch
			case eventlog.KindLost, eventlog.KindStopped:
				if !from.IsZero() {
					draw(ev.Time)
					from = time.Time{}
				}
				if ev.Kind == eventlog.KindStopped {
					x := g.x(ev.Time)
					g.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-width="2"><title>%s stopped</title></line>`+"\n", x, y+4, x, y+laneH-4, html.EscapeString(p))
				}
			case eventlog.KindBridgeAborted:
				x := g.x(ev.Time)
				g.text(x, y+6+0, "middle", `fill="#6a1b9a" font-size="10"`, "abort")
			case eventlog.KindBridgeDrained:
				x := g.x(ev.Time)
				if m := droppedRE.FindStringSubmatch(ev.Detail); m != nil && m[1] != "0" {
					g.text(x, y+6, "middle", `fill="#d50000" font-size="10" font-weight="bold"`, "drain DROPPED "+m[1])
				} else {
					g.text(x, y+6, "middle", `fill="#555" font-size="10"`, "drained")
				}
			}
		}
		if !from.IsZero() {
			draw(hi)
		}
	}
	// Sink attempts on their writer's lane; unattributed ones on the sink lane.
	sinkY := top + float64(len(pods))*laneH
	writer := check.WriterPods(s)
	held := map[string]map[uint64]bool{} // pod -> terms the Lease shows it holding
	for _, r := range s.Lease.Records {
		if r.Holder != "" && r.TermOK {
			p := check.PodOf(s, r.Holder)
			if held[p] == nil {
				held[p] = map[uint64]bool{}
			}
			held[p][r.Term] = true
		}
	}
	var highest uint64 // highest epoch the sink saw so far: commits below it are stale
	for _, a := range sortedAttempts(s) {
		y := sinkY + 14
		if lane, ok := laneOf[writer[a.Seq]]; ok {
			y = top + float64(lane)*laneH + 48
			if a.Committed() && a.Epoch > 0 && !held[writer[a.Seq]][a.Epoch] {
				// committed with a term its writer never held
				g.f(`<rect x="%.1f" y="%.1f" width="14" height="14" fill="none" stroke="#ff6f00" stroke-width="2"/>`+"\n", g.x(a.Arrived)-7, y-7)
			}
		}
		g.mark(a, g.x(a.Arrived), y, a.Committed() && a.Epoch < highest)
		if (a.Committed() || a.Op == contract.OpFence) && a.Epoch > highest {
			highest = a.Epoch
		}
		if a.FloorAfter > highest {
			highest = a.FloorAfter
		}
	}
	// The sink's floor as a step line.
	g.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#eef3f8"/>`+"\n", svgLeft, sinkY, svgPlot, sinkLaneH)
	g.text(svgLeft-8, sinkY+22, "end", `font-weight="bold"`, "sink")
	g.text(svgLeft-8, sinkY+38, "end", `fill="#777" font-size="10"`, "floor (highest epoch)")
	var maxFloor uint64 = 1
	for _, a := range s.Attempts {
		if a.FloorAfter > maxFloor {
			maxFloor = a.FloorAfter
		}
	}
	fy := func(f uint64) float64 { return sinkY + sinkLaneH - 8 - float64(f)/float64(maxFloor)*(sinkLaneH-30) }
	var pts []string
	var cur uint64
	px := svgLeft
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, fy(0)))
	for _, a := range sortedAttempts(s) {
		if a.FloorAfter != cur {
			x := g.x(a.Arrived)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, fy(cur)), fmt.Sprintf("%.1f,%.1f", x, fy(a.FloorAfter)))
			if a.FloorAfter > cur {
				g.text(x+3, fy(a.FloorAfter)-3, "start", `fill="#333" font-size="10"`, fmt.Sprintf("floor %d", a.FloorAfter))
			}
			cur = a.FloorAfter
		}
	}
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", svgLeft+svgPlot, fy(cur)))
	g.f(`<polyline points="%s" fill="none" stroke="#37474f" stroke-width="2"/>`+"\n", strings.Join(pts, " "))
	g.f("</svg>\n")
	return g.b.String()
}

func sortedAttempts(s *history.Scenario) []contract.Attempt {
	as := append([]contract.Attempt(nil), s.Attempts...)
	sort.SliceStable(as, func(i, j int) bool { return as[i].Seq < as[j].Seq })
	return as
}

// mark draws one sink attempt (stale commits ringed in red): commit = dot in its epoch's colour,
// duplicate = ring, rejection = red cross, fence = diamond.
func (g *svg) mark(a contract.Attempt, x, y float64, stale bool) {
	if stale {
		g.f(`<circle cx="%.1f" cy="%.1f" r="8" fill="none" stroke="#d50000" stroke-width="2"/>`+"\n", x, y)
	}
	title := html.EscapeString(fmt.Sprintf("seq %d %s %s=%s epoch %d -> %s at %s", a.Seq, a.Op, a.Key, a.Value, a.Epoch, a.Result, a.Arrived.UTC().Format("15:04:05.000")))
	switch {
	case a.Op == contract.OpFence:
		g.f(`<path d="M%.1f %.1f l6 6 l-6 6 l-6 -6 z" fill="%s" stroke="#000" stroke-width="0.8"><title>%s</title></path>`+"\n", x, y-6, termColor(a.Epoch), title)
	case strings.HasPrefix(a.Result, "REJECT"):
		g.f(`<path d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="#d50000" stroke-width="2.2"><title>%s</title></path>`+"\n", x-4, y-4, title)
	case a.Result == contract.ResultOKDup:
		g.f(`<circle cx="%.1f" cy="%.1f" r="4" fill="none" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`+"\n", x, y, termColor(a.Epoch), title)
	case a.Committed():
		stroke := "none"
		if a.Epoch == 0 {
			stroke = "#d50000" // committed without an epoch
		}
		g.f(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`+"\n", x, y, termColor(a.Epoch), stroke, title)
	default:
		g.f(`<rect x="%.1f" y="%.1f" width="6" height="6" fill="#999"><title>%s</title></rect>`+"\n", x-3, y-3, title)
	}
}

// legendRowH is the height of one row of the legend.
const legendRowH = 22.0

// legendItemW is the width a legend item takes: its swatch and its label.
func legendItemW(w float64, label string) float64 { return w + 10 + float64(len(label))*6.6 }

// legendWraps is how many rows the terms and chaos kinds need beyond the
// first (a mixed schedule has many of both).
func legendWraps(terms []uint64, kinds []string) float64 {
	x, rows := 10.0, 0.0
	add := func(w float64) {
		if x > 10 && x+w > svgLeft+svgPlot+svgRight-10 {
			x, rows = 10, rows+1
		}
		x += w
	}
	for _, t := range terms {
		add(legendItemW(24, fmt.Sprintf("term %d", t)))
	}
	for _, k := range kinds {
		add(legendItemW(24, styleOf(k).Legend))
	}
	return rows
}

func (g *svg) legend(terms []uint64, kinds []string) {
	x, y := 10.0, 18.0
	item := func(w float64, draw func(x, y float64), label string) {
		if x > 10 && x+legendItemW(w, label) > svgLeft+svgPlot+svgRight-10 { // wrap (legendWraps counts these rows)
			x, y = 10, y+legendRowH
		}
		draw(x, y)
		g.text(x+w+4, y+4, "start", `fill="#333"`, label)
		x += legendItemW(w, label)
	}
	for _, t := range terms {
		t := t
		item(24, func(x, y float64) {
			g.f(`<rect x="%.1f" y="%.1f" width="24" height="12" rx="2" fill="%s"/>`, x, y-6, termColor(t))
		}, fmt.Sprintf("term %d", t))
	}
	for _, k := range kinds {
		st := styleOf(k)
		item(24, func(x, y float64) {
			if st.AllLanes {
				g.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="5 3"/>`, x+12, y-7, x+12, y+7, st.Color)
				return
			}
			g.f(`<rect x="%.1f" y="%.1f" width="24" height="12" fill="%s" opacity="%s"/>`, x, y-6, st.Fill, st.Opacity)
		}, st.Legend)
	}
	x, y = 10, y+legendRowH
	item(10, func(x, y float64) {
		g.f(`<rect x="%.1f" y="%.1f" width="10" height="10" rx="2" fill="#1f77b4"/>`, x, y-5)
	}, "holds the Lease (watch)")
	item(16, func(x, y float64) { g.f(`<rect x="%.1f" y="%.1f" width="16" height="4" fill="#1f77b4"/>`, x, y-2) }, "believes it leads (its log)")
	item(10, func(x, y float64) { g.f(`<circle cx="%.1f" cy="%.1f" r="4" fill="#1f77b4"/>`, x+5, y) }, "commit (colour = epoch)")
	item(10, func(x, y float64) {
		g.f(`<path d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="#d50000" stroke-width="2.2"/>`, x+1, y-4)
	}, "rejected")
	item(12, func(x, y float64) {
		g.f(`<path d="M%.1f %.1f l6 6 l-6 6 l-6 -6 z" fill="#1f77b4" stroke="#000" stroke-width="0.8"/>`, x+6, y-6)
	}, "fence")
	item(10, func(x, y float64) {
		g.f(`<circle cx="%.1f" cy="%.1f" r="4" fill="none" stroke="#1f77b4" stroke-width="1.5"/>`, x+5, y)
	}, "duplicate (OK_DUP)")
	x, y = 10, y+legendRowH
	item(16, func(x, y float64) {
		g.f(`<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#d50000" stroke-width="2"/><circle cx="%.1f" cy="%.1f" r="4" fill="#1f77b4"/>`, x+8, y, x+8, y)
	}, "STALE commit (below the sink's epoch)")
	item(16, func(x, y float64) {
		g.f(`<rect x="%.1f" y="%.1f" width="14" height="14" fill="none" stroke="#ff6f00" stroke-width="2"/><circle cx="%.1f" cy="%.1f" r="4" fill="#2ca02c"/>`, x+1, y-7, x+8, y)
	}, "commit with a term its writer never held")
}

func termsUsed(s *history.Scenario) []uint64 {
	set := map[uint64]bool{}
	for _, r := range s.Lease.Records {
		if r.Holder != "" && r.TermOK {
			set[r.Term] = true
		}
	}
	for _, a := range s.Attempts {
		if a.Epoch > 0 {
			set[a.Epoch] = true
		}
	}
	var out []uint64
	for t := range set {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	if len(out) > 8 {
		out = out[len(out)-8:]
	}
	return out
}

func niceStep(total time.Duration) time.Duration {
	for _, st := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute} {
		if total/st <= 12 {
			return st
		}
	}
	return 30 * time.Minute
}

func fmtDur(d time.Duration) string {
	if d%time.Minute == 0 && d >= time.Minute {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

// tookText is a takeover's time to its first commit, or why there is none.
func tookText(t check.TakeoverTime) string {
	switch {
	case t.Judged():
		return t.Took.Round(time.Millisecond).String()
	case t.Superseded:
		return "superseded (stopped before it committed)"
	}
	return "never"
}

// withinText says how a takeover stands against its bound.
func withinText(t check.TakeoverTime) string {
	switch {
	case t.Within():
		return "within"
	case t.Judged():
		return "OVER"
	}
	return "-"
}

// styleOf is a kind's timeline style (fault.Fault.Style); a kind this
// build does not know is still shaded and labelled with its own name.
func styleOf(kind string) fault.Style {
	if f, ok := fault.Of(fault.Kind(kind)); ok {
		return f.Style
	}
	return fault.Style{Fill: "#9e9e9e", Opacity: "0.35", Color: "#424242", Label: kind, Legend: kind}
}

// kindsUsed are the scenario's chaos kinds in order of first injection.
func kindsUsed(s *history.Scenario) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range s.Chaos {
		if !seen[w.Kind] {
			seen[w.Kind] = true
			out = append(out, w.Kind)
		}
	}
	return out
}
