package lib_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// in_parallel runs every command, never more at once than the machine has
// cores, and names each one that failed in the file the caller reads: a
// failure among jobs run side by side is not lost to the ones that passed.
func TestInParallelKeepsEveryFailure(t *testing.T) {
	dir := t.TempDir()
	failed, running := filepath.Join(dir, "failed"), filepath.Join(dir, "running")
	// Each job notes how many jobs run beside it (a directory entry per
	// running job) and holds on until the file "go" exists or a deadline
	// passes, so the jobs overlap for as long as the pool allows.
	out, err := run(t, fmt.Sprintf(`
job() {
	touch %[2]q/$1; ls %[2]q | wc -l >>%[2]q.max
	for _ in $(seq 50); do [ -e %[2]q.go ] && break; sleep 0.02; done
	rm %[2]q/$1
	[ "$1" != 3 ] && [ "$1" != 5 ]
}
mkdir -p %[2]q; : >%[1]q
for i in 1 2 3 4 5 6; do in_parallel %[1]q job $i; [ $i != 4 ] || touch %[2]q.go; done
wait
echo "failed: $(tr '\n' ' ' <%[1]q)"
echo "max: $(sort -n %[2]q.max | tail -1) cores: $(nproc)"
`, failed, running), 30*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "failed: job 3 job 5 ") && !strings.Contains(out, "failed: job 5 job 3 ") {
		t.Errorf("want jobs 3 and 5 named as failed:\n%s", out)
	}
	var max, cores int
	if _, err := fmt.Sscanf(out[strings.Index(out, "max: "):], "max: %d cores: %d", &max, &cores); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if max > cores || max < 1 {
		t.Errorf("%d jobs ran at once on %d cores", max, cores)
	}
}
