package agent

import (
	"context"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/fencecheck/fencecheck/chaos/plan"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Resync bounds how stale the node can get if a watch event is missed.
const Resync = 2 * time.Second

// HealEvery bounds the heal loop's sleep: it also wakes at the next
// deadline in the ledger, this is for deadlines written after it slept.
const HealEvery = 250 * time.Millisecond

// LiveWithin is how recent the heal loop's last round must be for /livez.
const LiveWithin = 10 * time.Second

// Live reports whether the heal loop made progress recently.
func (a *Agent) Live() bool { return time.Since(a.LastHeal()) < LiveWithin }

// HealLoop heals expired cuts from the ledger until ctx ends. It never
// talks to the apiserver.
func (a *Agent) HealLoop(ctx context.Context) {
	for {
		next, err := a.HealExpired()
		if err != nil {
			a.log("heal loop: %v", err)
		}
		wait := HealEvery
		if d := time.Until(next); !next.IsZero() && d < wait {
			wait = max(d, 0)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Run heals from the ledger at once (before any cache syncs, apiserver or
// not), then watches chaos objects, pods and namespaces and reconciles on
// every change, at every deadline, and every Resync. Status writes run on
// their own goroutine with a timeout. On ctx's end it heals everything it
// owns.
func (a *Agent) Run(ctx context.Context, kube kubernetes.Interface) error {
	if err := a.HealOrphans(); err != nil {
		a.log("orphans: %v", err)
	}
	healCtx, stopHeal := context.WithCancel(context.Background())
	defer stopHeal()
	go a.HealLoop(healCtx)

	a.statusQ = make(chan func(context.Context), 256)
	statusCtx, stopStatus := context.WithCancel(context.Background())
	defer stopStatus()
	go func() {
		for {
			select {
			case <-statusCtx.Done():
				return
			case w := <-a.statusQ:
				w(statusCtx)
			}
		}
	}()

	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	dynF := dynamicinformer.NewDynamicSharedInformerFactory(a.Dyn, 0)
	ncInf := dynF.ForResource(GVR).Informer()
	ncInf.AddEventHandler(h)
	ppInf := dynF.ForResource(plan.PauseGVR).Informer()
	ppInf.AddEventHandler(h)
	podF := informers.NewSharedInformerFactory(kube, 0)
	podInf := podF.Core().V1().Pods().Informer()
	podInf.AddEventHandler(h)
	nsInf := podF.Core().V1().Namespaces().Informer()
	nsInf.AddEventHandler(h)
	if a.Scope.Labels == nil {
		a.Scope.Labels = func(ns string) (map[string]string, bool) {
			o, ok, err := nsInf.GetStore().GetByKey(ns)
			if err != nil || !ok {
				return nil, false
			}
			return o.(*corev1.Namespace).Labels, true
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	dynF.Start(stop)
	podF.Start(stop)
	a.log("agent on node %s: heal loop running; waiting for caches", a.Node)
	if !cache.WaitForCacheSync(ctx.Done(), ncInf.HasSynced, ppInf.HasSynced, podInf.HasSynced, nsInf.HasSynced) {
		return ctx.Err()
	}
	pauses := func() []*plan.PodPause {
		var pps []*plan.PodPause
		for _, o := range ppInf.GetStore().List() {
			if pp, err := DecodePause(o.(*unstructured.Unstructured)); err == nil {
				pps = append(pps, pp)
			} else {
				a.log("%v", err)
			}
		}
		return pps
	}
	lists := func() ([]*v1alpha1.NetworkChaos, []corev1.Pod) {
		var ncs []*v1alpha1.NetworkChaos
		for _, o := range ncInf.GetStore().List() {
			if nc, err := decode(o.(*unstructured.Unstructured)); err == nil {
				ncs = append(ncs, nc)
			} else {
				a.log("%v", err)
			}
		}
		var pods []corev1.Pod
		for _, o := range podInf.GetStore().List() {
			pods = append(pods, *o.(*corev1.Pod))
		}
		return ncs, pods
	}
	tick := time.NewTicker(Resync)
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ncs, pods := lists()
		next, err := a.Reconcile(ctx, ncs, pods)
		if err != nil {
			a.log("reconcile: %v", err)
		}
		nextPause, err := a.ReconcilePauses(ctx, pauses(), pods)
		if err != nil {
			a.log("reconcile pauses: %v", err)
		}
		if next.IsZero() || (!nextPause.IsZero() && nextPause.Before(next)) {
			next = nextPause
		}
		timer.Reset(time.Hour)
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			a.log("agent stopping: removing every route it owns")
			stopStatus()
			hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ncs, pods := lists()
			return a.HealAll(hctx, ncs, pods)
		case <-wake:
		case <-tick.C:
		case <-timer.C:
		}
	}
}
