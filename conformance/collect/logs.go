package collect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencecheck/fencecheck/eventlog"
)

// LineParser turns a log stream into events, line by line: plain output is
// skipped, a damaged event line is reported (evidence is never dropped
// silently).
type LineParser struct {
	Events []eventlog.Event
	Errors []string
	line   int
}

// Line feeds one line.
func (p *LineParser) Line(s string) {
	p.line++
	i := strings.Index(s, eventlog.Marker)
	if i < 0 {
		return
	}
	var e eventlog.Event
	if err := json.Unmarshal([]byte(s[i+len(eventlog.Marker):]), &e); err != nil {
		p.Errors = append(p.Errors, fmt.Sprintf("line %d: damaged event: %v", p.line, err))
		return
	}
	p.Events = append(p.Events, e)
}

// ParseAll parses a whole log.
func ParseAll(r io.Reader) *LineParser {
	p := &LineParser{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		p.Line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		p.Errors = append(p.Errors, "reading log: "+err.Error())
	}
	return p
}

// LogFollower follows the event log of every pod matching a selector, as
// pods appear, so that a deleted pod's events are kept.
type LogFollower struct {
	client    kubernetes.Interface
	namespace string
	selector  string
	logf      Logf

	mu        sync.Mutex
	events    map[string][]eventlog.Event
	errors    []string
	following map[string]bool // by pod UID
	wg        sync.WaitGroup
	cancel    context.CancelFunc
	done      chan struct{}
}

// FollowLogs starts following pods matching selector in namespace.
func FollowLogs(ctx context.Context, client kubernetes.Interface, namespace, selector string, logf Logf) *LogFollower {
	f := &LogFollower{client: client, namespace: namespace, selector: selector, logf: logf,
		events: map[string][]eventlog.Event{}, following: map[string]bool{}, done: make(chan struct{})}
	ctx, f.cancel = context.WithCancel(ctx)
	go f.discover(ctx)
	return f
}

func (f *LogFollower) log(format string, a ...any) {
	if f.logf != nil {
		f.logf(format, a...)
	}
}

// discover polls the pod list and starts a follower for every pod whose
// container has started.
func (f *LogFollower) discover(ctx context.Context) {
	defer close(f.done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	lastRefresh := time.Now()
	for {
		pods, err := f.client.CoreV1().Pods(f.namespace).List(ctx, metav1.ListOptions{LabelSelector: f.selector})
		// Follow streams can stall silently on a busy node: every few
		// seconds, read each running pod's whole log afresh.
		refresh := time.Since(lastRefresh) > 3*time.Second
		if refresh {
			lastRefresh = time.Now()
		}
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if !started(p) {
					continue
				}
				if refresh && p.Status.Phase == corev1.PodRunning {
					if err := f.Refresh(ctx, p.Name); err != nil && ctx.Err() == nil {
						f.log("log refresh: %v", err)
					}
				}
				f.mu.Lock()
				fresh := !f.following[string(p.UID)]
				f.following[string(p.UID)] = true
				f.mu.Unlock()
				if fresh {
					f.wg.Add(1)
					go f.follow(ctx, p.Name)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func started(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}

func (f *LogFollower) follow(ctx context.Context, pod string) {
	defer f.wg.Done()
	f.log("following the event log of %s/%s", f.namespace, pod)
	rc, err := f.client.CoreV1().Pods(f.namespace).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		f.addError(fmt.Sprintf("%s: following the log failed: %v", pod, err))
		return
	}
	defer rc.Close()
	// The stream starts at the log's first line, as a Refresh does: both
	// lists are prefixes of the same log, and the longer one wins.
	p := &LineParser{}
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		f.mu.Lock()
		n := len(p.Events)
		p.Line(sc.Text())
		if len(p.Events) > n && len(p.Events) > len(f.events[pod]) {
			f.events[pod] = p.Events[:len(p.Events):len(p.Events)]
		}
		f.mu.Unlock()
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		f.addError(fmt.Sprintf("%s: the log stream broke: %v", pod, err))
	}
	for _, e := range p.Errors {
		f.addError(pod + ": " + e)
	}
}

func (f *LogFollower) addError(s string) {
	f.mu.Lock()
	f.errors = append(f.errors, s)
	f.mu.Unlock()
}

// Refresh reads pod's complete log once more and replaces the followed
// events when it holds at least as many: a follow stream can stall
// silently (a busy kubelet), a fresh read cannot.
func (f *LogFollower) Refresh(ctx context.Context, pod string) error {
	b, err := f.client.CoreV1().Pods(f.namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%s: reading the log: %w", pod, err)
	}
	parsed := ParseAll(bytes.NewReader(b))
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(parsed.Events) >= len(f.events[pod]) {
		f.events[pod] = parsed.Events
	}
	return nil
}

// Snapshot returns the events followed so far, by pod.
func (f *LogFollower) Snapshot() map[string][]eventlog.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]eventlog.Event, len(f.events))
	for p, evs := range f.events {
		out[p] = append([]eventlog.Event(nil), evs...)
	}
	return out
}

// Stop ends the followers. For every pod that still exists its complete
// log is read once more and replaces what was followed when it holds at
// least as many events (a follow stream can end early); deleted pods keep
// what was followed. It returns the events by pod and the problems seen.
func (f *LogFollower) Stop(ctx context.Context) (map[string][]eventlog.Event, []string) {
	f.cancel()
	<-f.done
	f.wg.Wait()
	events := f.Snapshot()
	f.mu.Lock()
	errs := append([]string(nil), f.errors...)
	f.mu.Unlock()
	pods, err := f.client.CoreV1().Pods(f.namespace).List(ctx, metav1.ListOptions{LabelSelector: f.selector})
	if err != nil {
		return events, append(errs, "final log read: list pods: "+err.Error())
	}
	// Every pod's log at once (each read is a round trip through the
	// apiserver), then merged in the pods' order.
	logs := make([]finalLog, len(pods.Items))
	var wg sync.WaitGroup
	for i := range pods.Items {
		p := &pods.Items[i]
		if !started(p) {
			continue
		}
		logs[i].pod = p.Name
		wg.Go(func() {
			b, err := f.client.CoreV1().Pods(f.namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				logs[i].err = err
				return
			}
			logs[i].parsed = ParseAll(bytes.NewReader(b))
		})
	}
	wg.Wait()
	for _, l := range logs {
		switch {
		case l.pod == "": // not started: no log was read
		case l.err != nil:
			errs = append(errs, fmt.Sprintf("%s: final log read: %v", l.pod, l.err))
		default:
			for _, e := range l.parsed.Errors {
				errs = append(errs, l.pod+": "+e)
			}
			if len(l.parsed.Events) >= len(events[l.pod]) {
				events[l.pod] = l.parsed.Events
			} else {
				errs = append(errs, fmt.Sprintf("%s: the final log has %d events, fewer than the %d followed; kept the followed ones", l.pod, len(l.parsed.Events), len(events[l.pod])))
			}
		}
	}
	return events, errs
}

// finalLog is one pod's log as Stop read it.
type finalLog struct {
	pod    string
	parsed *LineParser
	err    error
}
