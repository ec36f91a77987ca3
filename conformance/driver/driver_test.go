package driver

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/conformance/scenario"
)

func TestNamespaceNames(t *testing.T) {
	dr := &Driver{Config: Config{RunID: "20261130-040000"}}
	for _, d := range scenario.All() {
		ns := dr.Namespace(d)
		if len(ns) > 63 || strings.ToLower(ns) != ns || strings.HasSuffix(ns, "-") {
			t.Errorf("bad namespace %q", ns)
		}
	}
}
