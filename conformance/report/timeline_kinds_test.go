package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/conformance/fault"
	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/conformance/synth"
)

// Every chaos kind is labelled on the timeline and in its legend; a kind
// the renderer has no style for is still shown under its own name.
func TestTimelineLabelsEachKind(t *testing.T) {
	s := synth.Scenario("kinds", synth.Defect{})
	at := s.Chaos[0].Recovered.Add(time.Second)
	s.Chaos = append(s.Chaos,
		history.ChaosWindow{Kind: string(fault.LeaseDelete), Pod: "pod-c", Injected: at, Recovered: at},
		history.ChaosWindow{Kind: string(fault.PodDelete), Pod: "pod-c", Injected: at.Add(time.Second), Recovered: at.Add(2 * time.Second)},
		history.ChaosWindow{Kind: string(fault.RollingRestart), Pod: "pod-b", Injected: at.Add(2 * time.Second), Recovered: at.Add(4 * time.Second)},
		history.ChaosWindow{Kind: "pause", Pod: "pod-b", Injected: at.Add(4 * time.Second), Recovered: at.Add(5 * time.Second)},
		history.ChaosWindow{Kind: string(fault.HeldWrites), Pod: "pod-b", Injected: at.Add(5 * time.Second), Recovered: at.Add(7 * time.Second)},
		history.ChaosWindow{Kind: string(fault.LostAnswers), Pod: "pod-c", Injected: at.Add(7 * time.Second), Recovered: at.Add(8 * time.Second)},
		history.ChaosWindow{Kind: string(fault.SinkCrash), Pod: "sink-0", Injected: at.Add(8 * time.Second), Recovered: at.Add(9 * time.Second)},
		history.ChaosWindow{Kind: "a-kind-of-tomorrow", Pod: "pod-c", Injected: at.Add(9 * time.Second), Recovered: at.Add(10 * time.Second)})
	svg := Timeline(s)
	for _, want := range []string{">partition<", ">partition: cut off from the apiserver<", ">Lease deleted<", ">pod deleted<", ">pod deleted (SIGTERM)<",
		">rolling restart<", ">pause<", ">pause (frozen)<", ">writes held<", ">held writes (witness)<", ">answers lost<", ">lost answers (witness)<",
		">sink crash<", ">sink crash (SIGKILL)<", ">sink-0<", ">a-kind-of-tomorrow<", "stroke-dasharray"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	s.Schedule = []byte(`{"config":{"seed":7}}`)
	if page := string(HTML(synth.Run("r", s), nil)); !strings.Contains(page, "fault schedule") || !strings.Contains(page, "&#34;seed&#34;:7") {
		t.Error("the page does not show the schedule to replay")
	}
}

// Every registered fault is drawn with its own style on the timeline
// (the driver records each as the chaos window kind of its name).
func TestEveryFaultHasItsStyle(t *testing.T) {
	for _, f := range fault.All {
		if st := styleOf(string(f.Kind)); st != f.Style {
			t.Errorf("kind %q is drawn as %+v, not its own style", f.Kind, st)
		}
	}
}

// A mixed run's many terms and kinds wrap onto more legend rows instead
// of running off the picture's right edge.
func TestLegendWraps(t *testing.T) {
	s := synth.Scenario("many", synth.Defect{})
	at := s.Chaos[0].Recovered
	for i, k := range []string{string(fault.PodDelete), string(fault.RollingRestart), string(fault.LeaseDelete), string(fault.Pause),
		string(fault.HeldWrites), string(fault.LostAnswers), string(fault.SinkCrash)} {
		s.Chaos = append(s.Chaos, history.ChaosWindow{Kind: k, Pod: "pod-a", Injected: at.Add(time.Duration(i) * time.Second), Recovered: at.Add(time.Duration(i+1) * time.Second)})
	}
	for term := uint64(3); term <= 12; term++ {
		r := s.Lease.Records[len(s.Lease.Records)-1]
		r.Term, r.TermRaw, r.Holder = term, strconv.FormatUint(term, 10), "pod-b_0"
		s.Lease.Records = append(s.Lease.Records, r)
	}
	svg := Timeline(s)
	width := svgLeft + svgPlot + svgRight
	for _, m := range regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)" text-anchor="start" fill="#333">([^<]*)<`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		if x+float64(len(m[3]))*6.6 > width {
			t.Errorf("legend item %q at x=%s runs off the %v px picture", m[3], m[1], width)
		}
	}
	for _, want := range []string{">term 12<", ">sink crash (SIGKILL)<", ">lost answers (witness)<", ">commit with a term its writer never held<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("legend lacks %q", want)
		}
	}
	if legendWraps(termsUsed(s), kindsUsed(s)) < 1 {
		t.Error("12 terms and 8 kinds fit one legend row?")
	}
}
