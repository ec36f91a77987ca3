package certify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/junit"
)

// Files written by WriteReports into the report directory.
const (
	FileJSON        = "certify.json"
	FileJUnit       = "junit.xml"
	FileCertificate = "certificate.md"
)

// WriteReports writes the JSON report, JUnit XML and the Markdown
// certificate into dir (created if missing).
func WriteReports(dir string, r Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report dir: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	ju, err := JUnit(r)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{FileJSON: append(js, '\n'), FileJUnit: ju, FileCertificate: []byte(Certificate(r))} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// JUnit renders the report with one test suite per profile. An
// inconclusive check is a failure of type "inconclusive": never a pass.
func JUnit(r Report) ([]byte, error) {
	var out junit.Suites
	for _, p := range r.Profiles {
		suite := junit.Suite{Name: "certify/" + p}
		var total time.Duration
		for _, res := range r.Results {
			if res.Profile != p {
				continue
			}
			c := junit.Case{Name: res.Name, ClassName: "certify." + p, Time: secs(res.Duration)}
			if !res.Passed() {
				suite.Failures++
				var body strings.Builder
				for _, e := range res.Exchanges {
					body.WriteString(e.String() + "\n")
				}
				c.Failure = &junit.Failure{Message: res.Message, Type: string(res.Verdict), Text: body.String()}
			}
			total += res.Duration
			suite.Tests++
			suite.Cases = append(suite.Cases, c)
		}
		suite.Time = secs(total)
		out.Suites = append(out.Suites, suite)
	}
	var b bytes.Buffer
	if err := junit.Write(&b, out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Certificate renders the Markdown certificate: a verdict per profile,
// then every check, then the failures with their transcripts. Sink text
// only ever appears scrubbed (no backticks, no control characters) inside
// code blocks, so it cannot end a block or inject Markdown.
func Certificate(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sink contract v1 certificate\n\n")
	fmt.Fprintf(&b, "- Sink: `%s`\n- Run: `%s`\n- Seed: `%d` (`fencecheck certify --seed %d` sends the same traffic to a fresh sink)\n- Started: %s, finished: %s\n\n",
		scrub(r.SinkURL), scrub(r.RunID), r.Seed, r.Seed, r.Started.Format(time.RFC3339), r.Finished.Format(time.RFC3339))
	fmt.Fprintf(&b, "| Profile | Verdict | Checks passed |\n|---|---|---|\n")
	for _, p := range AllProfiles {
		n, ok := 0, 0
		for _, res := range r.Results {
			if res.Profile == p {
				n++
				if res.Passed() {
					ok++
				}
			}
		}
		verdict := r.ProfileVerdict(p)
		switch verdict {
		case ProfilePass:
		case ProfileNotRun:
			if why := r.NotRun[p]; why != "" {
				verdict += ": " + scrub(why)
			}
		default:
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d |\n", p, verdict, ok, len(checksOf(p)))
	}
	fmt.Fprintf(&b, "\n## Checks\n\n| Check | Result | What it asks |\n|---|---|---|\n")
	for _, res := range r.Results {
		v := string(res.Verdict)
		if !res.Passed() {
			v = "**" + strings.ToUpper(v) + "**"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", res.Name, v, res.Summary)
	}
	if len(r.Failed())+len(r.InconclusiveChecks()) > 0 {
		fmt.Fprintf(&b, "\n## Failures and inconclusive checks\n")
		for _, res := range r.Results {
			if res.Passed() {
				continue
			}
			fmt.Fprintf(&b, "\n### `%s` (%s)\n\n```\n%s\n\n", res.Name, res.Verdict, scrub(res.Message))
			for _, e := range res.Exchanges {
				fmt.Fprintf(&b, "%s\n", scrub(e.String()))
			}
			fmt.Fprintf(&b, "```\n")
		}
	}
	return b.String()
}
