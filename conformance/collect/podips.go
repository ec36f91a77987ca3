package collect

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/conformance/history"
)

// PodIPWatcher records, from the API, which IP each pod matching a
// selector held and when: the harness's own map from the witness's source
// addresses to pods (a pod could claim any identity in a header, not its
// IP). It lists, then watches from the list's resourceVersion, and lists
// again whenever the watch ends.
type PodIPWatcher struct {
	client    kubernetes.Interface
	namespace string
	selector  string
	logf      Logf

	mu     sync.Mutex
	open   map[string]history.PodIP // by pod name: the address it holds now
	closed []history.PodIP
	errors []string
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchPodIPs starts recording the IPs of pods matching selector.
func WatchPodIPs(ctx context.Context, client kubernetes.Interface, namespace, selector string, logf Logf) *PodIPWatcher {
	w := &PodIPWatcher{client: client, namespace: namespace, selector: selector, logf: logf,
		open: map[string]history.PodIP{}, done: make(chan struct{})}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w
}

func (w *PodIPWatcher) run(ctx context.Context) {
	defer close(w.done)
	for ctx.Err() == nil {
		rv, err := w.list(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.problem("list pods: %v", err)
				pause(ctx, time.Second) // the harness's own path to the apiserver; chaos never cuts it
			}
			continue
		}
		if err := w.watch(ctx, rv); err != nil && ctx.Err() == nil {
			w.log("pod IP watch in %s ended (%v): listing again", w.namespace, err)
		}
	}
}

// list observes every pod and closes the addresses of pods gone since.
func (w *PodIPWatcher) list(ctx context.Context) (string, error) {
	pods, err := w.client.CoreV1().Pods(w.namespace).List(ctx, metav1.ListOptions{LabelSelector: w.selector})
	if err != nil {
		return "", err
	}
	now := time.Now()
	seen := map[string]bool{}
	for i := range pods.Items {
		seen[pods.Items[i].Name] = true
		w.observe(&pods.Items[i], now)
	}
	w.mu.Lock()
	for name := range w.open {
		if !seen[name] {
			w.closeLocked(name, now)
		}
	}
	w.mu.Unlock()
	return pods.ResourceVersion, nil
}

func (w *PodIPWatcher) watch(ctx context.Context, rv string) error {
	wi, err := w.client.CoreV1().Pods(w.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: w.selector, ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed")
			}
			now := time.Now()
			pod, isPod := ev.Object.(*corev1.Pod)
			switch {
			case ev.Type == watch.Error || !isPod:
				return fmt.Errorf("watch error event: %v", ev.Object)
			case ev.Type == watch.Deleted:
				w.mu.Lock()
				w.closeLocked(pod.Name, now)
				w.mu.Unlock()
			default:
				w.observe(pod, now)
			}
		}
	}
}

// observe records pod's address as of now: a new one opens, a changed or
// released one (no IP, or the pod finished) closes.
func (w *PodIPWatcher) observe(pod *corev1.Pod, now time.Time) {
	ip := pod.Status.PodIP
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		ip = "" // a finished pod's sandbox is gone; its IP may be handed out again
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.open[pod.Name]; ok {
		if cur.IP == ip {
			return
		}
		w.closeLocked(pod.Name, now)
	}
	if ip != "" {
		from := now
		if t := sandboxReady(pod); !t.IsZero() && t.Before(from) {
			from = t
		}
		w.open[pod.Name] = history.PodIP{Pod: pod.Name, IP: ip, From: from}
	}
}

// sandboxReady bounds from below when the pod could first send from its
// address: the kubelet's start time for it (it accepted the pod before it
// created the sandbox that got the IP), else the PodReadyToStartContainers
// condition, in the API's whole seconds, rounded down. The kubelet's status
// update carrying the IP can reach the API after the containers started
// sending, and even the condition's time was seen later than a leader's
// first fence: the watch alone would open the address too late. An address
// two pods could have held then is ambiguous (check.SenderOf), never a guess.
func sandboxReady(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func (w *PodIPWatcher) closeLocked(name string, now time.Time) {
	if cur, ok := w.open[name]; ok {
		cur.To = now
		w.closed = append(w.closed, cur)
		delete(w.open, name)
	}
}

func (w *PodIPWatcher) problem(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	w.mu.Lock()
	w.errors = append(w.errors, msg)
	w.mu.Unlock()
	w.log("pod IP watch in %s: %s", w.namespace, msg)
}

func (w *PodIPWatcher) log(format string, a ...any) {
	if w.logf != nil {
		w.logf(format, a...)
	}
}

// Stop ends the recording: every address seen, by start time (those still
// held have no end), and the problems that left stretches unwatched.
func (w *PodIPWatcher) Stop() ([]history.PodIP, []string) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]history.PodIP(nil), w.closed...)
	for _, p := range w.open {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].From.Equal(out[j].From) {
			return out[i].From.Before(out[j].From)
		}
		return out[i].Pod < out[j].Pod
	})
	return out, append([]string(nil), w.errors...)
}
