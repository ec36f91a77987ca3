package agent

import (
	"context"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Resync bounds how stale the node can get if a watch event is missed.
const Resync = 2 * time.Second

// Run watches NetworkChaos objects and pods and reconciles on every change,
// at every partition's deadline, and every Resync. On ctx's end it heals
// everything it owns.
func (a *Agent) Run(ctx context.Context, kube kubernetes.Interface) error {
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
	podF := informers.NewSharedInformerFactory(kube, 0)
	podInf := podF.Core().V1().Pods().Informer()
	podInf.AddEventHandler(h)
	stop := make(chan struct{})
	defer close(stop)
	dynF.Start(stop)
	podF.Start(stop)
	a.log("agent on node %s: waiting for caches", a.Node)
	if !cache.WaitForCacheSync(ctx.Done(), ncInf.HasSynced, podInf.HasSynced) {
		return ctx.Err()
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
		timer.Reset(time.Hour)
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			a.log("agent stopping: removing every route it owns")
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
