//go:build integration

package kubetest

import (
	"context"
	"path/filepath"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestStartServesAndEnforcesConcurrency(t *testing.T) {
	s := Start(t, Options{})
	kube := kubernetes.NewForConfigOrDie(s.Config)
	ctx := context.Background()
	l, err := kube.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := l.DeepCopy()
	holder := "a"
	l.Spec.HolderIdentity = &holder // a real change: the resourceVersion moves
	if _, err := kube.CoordinationV1().Leases("default").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A write carrying a stale resourceVersion must be refused: the
	// property a fake clientset does not have.
	first.Labels = map[string]string{"stale": "yes"}
	if _, err := kube.CoordinationV1().Leases("default").Update(ctx, first, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: got %v, want Conflict", err)
	}
	s.Stop()
	if _, err := kube.CoordinationV1().Leases("default").Get(ctx, "x", metav1.GetOptions{}); err == nil {
		t.Fatal("apiserver still answers after Stop")
	}
}

func TestRBACModeDeniesUnboundUser(t *testing.T) {
	s := Start(t, Options{AuthorizationMode: "RBAC"})
	user, groups := ServiceAccountUser("default", "nobody")
	kube := kubernetes.NewForConfigOrDie(s.Impersonate(user, groups...))
	_, err := kube.CoordinationV1().Leases("default").Get(context.Background(), "x", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("unbound service account: got %v, want Forbidden", err)
	}
}

// The apiserver restarts on the same port over the same etcd, which keeps
// its data across a compaction; the kubeconfig reaches it as the admin.
func TestRestartCompactAndKubeconfig(t *testing.T) {
	s := Start(t, Options{})
	ctx := context.Background()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.Kubeconfig(kc, ""); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := kube.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.StopAPIServer()
	if _, err := kube.CoordinationV1().Leases("default").Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Fatal("apiserver still answers after StopAPIServer")
	}
	rev, err := s.Compact()
	if err != nil || rev <= 0 {
		t.Fatalf("Compact: revision %d, %v", rev, err)
	}
	if err := s.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoordinationV1().Leases("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
