package bench

import (
	"context"
	"sync"
	"time"

	"github.com/sbxdev/sbx/internal/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// observer watches the run's namespace and marks, for each pod (by name,
// which its claim shares), when its claim was first seen Bound, when it
// was first seen scheduled and Running, from the start of its create: the
// split of where a create's time goes. The marks are late by the watch's
// delivery, as the provider's own watch is.
type observer struct {
	mu     sync.Mutex
	starts map[string]time.Time
	marks  map[string]map[string]time.Duration
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// The marks the observer sets.
const (
	markBound     = "claim Bound"
	markScheduled = "pod scheduled"
	markRunning   = "pod Running"
)

func observe(client *kube.Client, ns string) *observer {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{starts: map[string]time.Time{}, marks: map[string]map[string]time.Duration{}, cancel: cancel}
	pods, claims := client.CoreV1().Pods(ns), client.CoreV1().PersistentVolumeClaims(ns)
	o.done.Go(func() {
		follow(ctx, func(opts metav1.ListOptions) (runtime.Object, string, error) {
			l, err := pods.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l, l.ResourceVersion, nil
		}, func(opts metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, opts) }, o.pod)
	})
	o.done.Go(func() {
		follow(ctx, func(opts metav1.ListOptions) (runtime.Object, string, error) {
			l, err := claims.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l, l.ResourceVersion, nil
		}, func(opts metav1.ListOptions) (watch.Interface, error) { return claims.Watch(ctx, opts) }, o.claim)
	})
	return o
}

// follow lists, then watches from the list's version, again after a watch
// ends, handing each object to seen, until ctx ends.
func follow(ctx context.Context, list func(metav1.ListOptions) (runtime.Object, string, error), watchFrom func(metav1.ListOptions) (watch.Interface, error), seen func(runtime.Object)) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			_, v, err := list(metav1.ListOptions{})
			if err != nil {
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			rv = v
		}
		w, err := watchFrom(metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			rv = ""
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				rv = ""
				break
			}
			if m, ok := ev.Object.(metav1.ObjectMetaAccessor); ok {
				rv = m.GetObjectMeta().GetResourceVersion()
			}
			seen(ev.Object)
		}
		w.Stop()
	}
}

func (o *observer) pod(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			o.mark(pod.Name, markScheduled)
		}
	}
	if pod.Status.Phase == corev1.PodRunning {
		o.mark(pod.Name, markRunning)
	}
}

func (o *observer) claim(obj runtime.Object) {
	if c, ok := obj.(*corev1.PersistentVolumeClaim); ok && c.Status.Phase == corev1.ClaimBound {
		o.mark(c.Name, markBound)
	}
}

// start notes the start of name's create.
func (o *observer) start(name string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts[name] = at
	o.marks[name] = map[string]time.Duration{}
}

// mark notes, the first time only, that what happened to name now.
func (o *observer) mark(name, what string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.marks[name]
	if _, set := m[what]; ok && !set {
		m[what] = now.Sub(o.starts[name])
	}
}

// of is the marks of name's create.
func (o *observer) of(name string) map[string]time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]time.Duration{}
	for k, v := range o.marks[name] {
		out[k] = v
	}
	return out
}

func (o *observer) stop() {
	o.cancel()
	o.done.Wait()
}
