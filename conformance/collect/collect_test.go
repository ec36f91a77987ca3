package collect

import (
	"context"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fencecheck/fencecheck/conformance/history"
	"github.com/fencecheck/fencecheck/leader"
)

const ann = leader.TermAnnotation

func lease(holder, term, rv string) *coordv1.Lease {
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", UID: "u1", ResourceVersion: rv}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if term != "" {
		l.Annotations = map[string]string{ann: term}
	}
	return l
}

func TestLeaseRecordParsesTerm(t *testing.T) {
	now := time.Now()
	r := LeaseRecord(lease("p_00000001", "7", "12"), "MODIFIED", ann, now)
	if r.Holder != "p_00000001" || r.Term != 7 || !r.TermOK || r.ResourceVersion != "12" || r.UID != "u1" {
		t.Errorf("%+v", r)
	}
	for _, bad := range []string{"", "-1", "0x7", " 7"} {
		r := LeaseRecord(lease("p", bad, "1"), "MODIFIED", ann, now)
		if r.TermOK {
			t.Errorf("term %q accepted", bad)
		}
	}
}

func TestLineParser(t *testing.T) {
	p := ParseAll(strings.NewReader("plain\nFCEVENT {\"kind\":\"acquired\",\"epoch\":3}\nI1130 FCEVENT {\"kind\":\"lost\",\"epoch\":3}\nFCEVENT {broken\n"))
	if len(p.Events) != 2 || p.Events[0].Epoch != 3 || p.Events[1].Kind != "lost" {
		t.Errorf("events %+v", p.Events)
	}
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0], "line 4") {
		t.Errorf("a damaged event must be reported with its line: %v", p.Errors)
	}
}

func waitRecords(t *testing.T, lw *LeaseWatcher, n int) []history.LeaseRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lw.WaitFor(ctx, "records", func(rs []history.LeaseRecord) bool { return len(rs) >= n }); err != nil {
		t.Fatalf("%v; have %+v", err, lw.Snapshot().Records)
	}
	return lw.Snapshot().Records
}

func TestLeaseWatcherRecordsEveryVersion(t *testing.T) {
	cs := fake.NewSimpleClientset(lease("a_00000001", "1", "1"))
	ctx := context.Background()
	lw, err := WatchLease(ctx, cs, "ns", "l", ann, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	waitRecords(t, lw, 1)
	// The fake's watch starts asynchronously: wait until it is registered.
	upd := func(l *coordv1.Lease) {
		if _, err := cs.CoordinationV1().Leases("ns").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !watching(cs) && time.Now().Before(deadline) {
		pause(ctx, 10*time.Millisecond)
	}
	upd(lease("a_00000001", "1", "2"))
	upd(lease("c_00000003", "2", "3"))
	rs := waitRecords(t, lw, 3)
	w := lw.Stop()
	if rs[0].Event != "LIST" || rs[1].Event != "MODIFIED" || rs[2].Holder != "c_00000003" || rs[2].Term != 2 {
		t.Errorf("records %+v", rs)
	}
	if len(w.Gaps) != 0 || w.End.Before(w.Start) {
		t.Errorf("watch %+v", w)
	}
}

func watching(cs *fake.Clientset) bool {
	for _, a := range cs.Actions() {
		if a.GetVerb() == "watch" {
			return true
		}
	}
	return false
}

func TestLeaseWatcherRecordsGapOn410(t *testing.T) {
	cs := fake.NewSimpleClientset(lease("a_00000001", "1", "1"))
	gone := watch.NewFake()
	first := true
	cs.PrependWatchReactor("leases", func(action k8stesting.Action) (bool, watch.Interface, error) {
		if first {
			first = false
			return true, gone, nil
		}
		return false, nil, nil
	})
	lw, err := WatchLease(context.Background(), cs, "ns", "l", ann, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	gone.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(lw.Snapshot().Gaps) == 0 && ctx.Err() == nil {
		pause(ctx, 10*time.Millisecond)
	}
	w := lw.Stop()
	if len(w.Gaps) != 1 || !strings.Contains(w.Gaps[0].Reason, "410") {
		t.Fatalf("want one 410 gap, got %+v", w.Gaps)
	}
	// The relist records the Lease again.
	if len(w.Records) < 2 || w.Records[1].Event != "LIST" {
		t.Errorf("records after the gap %+v", w.Records)
	}
}

var _ runtime.Object = &coordv1.Lease{}
