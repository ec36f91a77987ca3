//go:build integration

package collect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/internal/kubetest"
)

func holder(s string) *string { return &s }

// Against a real apiserver: every version is recorded in order; a watch
// that cannot resume (its resourceVersion is compacted away while the
// apiserver is down) records a 410 gap and relists; updates after the gap
// are recorded again.
func TestLeaseWatcherRealAPIServer(t *testing.T) {
	a := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(a.Config)
	leases := cs.CoordinationV1().Leases("default")
	l, err := leases.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fc", Annotations: map[string]string{ann: "1"}},
		Spec: coordv1.LeaseSpec{HolderIdentity: holder("a_00000001")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := WatchLease(ctx, cs, "default", "fc", ann, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	update := func(h, term string) {
		t.Helper()
		cur, err := leases.Get(ctx, "fc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewMicroTime(time.Now())
		cur.Spec.HolderIdentity, cur.Annotations[ann], cur.Spec.RenewTime = holder(h), term, &now
		if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitN := func(n int) []history.LeaseRecord {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := lw.WaitFor(c, fmt.Sprintf("%d records", n), func(rs []history.LeaseRecord) bool { return len(rs) >= n }); err != nil {
			t.Fatalf("%v: %+v", err, lw.Snapshot())
		}
		return lw.Snapshot().Records
	}
	update("a_00000001", "1")
	update("c_00000003", "2")
	rs := waitN(3)
	if rs[0].Event != "LIST" || rs[0].ResourceVersion != l.ResourceVersion || rs[2].Holder != "c_00000003" || rs[2].Term != 2 {
		t.Fatalf("records %+v", rs)
	}
	// Other writes move etcd's revision past the watch's resourceVersion.
	for i := 0; i < 3; i++ {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "bump-"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.StopAPIServer()
	rev, err := a.Compact()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted etcd at revision %d", rev)
	if err := a.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(lw.Snapshot().Gaps) == 0 && c.Err() == nil {
		pause(c, 50*time.Millisecond)
	}
	update("b_00000002", "3")
	rs = waitN(5)
	w := lw.Stop()
	if len(w.Gaps) != 1 || !strings.Contains(w.Gaps[0].Reason, "410") {
		t.Fatalf("want one 410 gap, got %+v", w.Gaps)
	}
	var events []string
	for _, r := range rs {
		events = append(events, r.Event+":"+r.Holder)
	}
	want := "LIST:a_00000001 MODIFIED:a_00000001 MODIFIED:c_00000003 LIST:c_00000003 MODIFIED:b_00000002"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("records\n got %s\nwant %s", got, want)
	}
	t.Logf("gap %s .. %s: %s", w.Gaps[0].From.Format(time.RFC3339Nano), w.Gaps[0].To.Format(time.RFC3339Nano), w.Gaps[0].Reason)
}
