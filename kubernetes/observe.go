package kubernetes

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// Watch implements sbx.Watcher: a pod of this instance whose container
// ended (out of memory, a crashed agent) is reported with its reason and
// exit code. A pod deleted (a pause, a kill, an operator) is not a death:
// reconcile sees what is missing.
func (p *Provider) Watch(ctx context.Context, died func(sbx.Died)) {
	sel := metav1.ListOptions{LabelSelector: labels.Set{LabelInstance: p.cfg.Name}.String()}
	reported := map[string]bool{} // UID → reported, of pods not yet deleted
	for ctx.Err() == nil {
		list, err := p.pods().List(ctx, sel)
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for i := range list.Items {
			p.check(&list.Items[i], reported, died)
		}
		opts := sel
		opts.ResourceVersion = list.ResourceVersion
		w, err := p.pods().Watch(ctx, opts)
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			switch {
			case !ok:
			case ev.Type == watch.Deleted:
				delete(reported, string(pod.UID)) // gone: nothing more to report of it
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				p.check(pod, reported, died)
			}
		}
		w.Stop()
	}
}

// check reports pod once when it has ended.
func (p *Provider) check(pod *corev1.Pod, reported map[string]bool, died func(sbx.Died)) {
	if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded || reported[string(pod.UID)] || pod.DeletionTimestamp != nil {
		return
	}
	reported[string(pod.UID)] = true
	if id := pod.Labels[LabelID]; idPattern.MatchString(id) {
		died(sbx.Died{ProviderSandboxID: id, Diagnostic: "its pod " + pod.Name + " ended: " + ended(pod)})
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Logs implements sbx.LogReader: the pod's log (its agent's and start
// command's output), as the kubelet keeps it.
func (p *Provider) Logs(ctx context.Context, h sbx.Handle) ([]sbx.LogLine, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, err
	}
	rc, err := p.client.CoreV1().PodLogs(ctx, p.cfg.Namespace, podName(id), &corev1.PodLogOptions{Container: container, Timestamps: true})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out []sbx.LogLine
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		stamp, line, _ := strings.Cut(sc.Text(), " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			at, line = time.Time{}, sc.Text()
		}
		out = append(out, sbx.LogLine{At: at.UTC(), Source: Name, Line: line})
	}
	return out, sc.Err()
}

// Metrics implements sbx.MetricsReader: the sandbox's own measure
// (`agent stats`, through pods/exec: its cgroup's CPU seconds and memory,
// its processes). The metrics API gives a CPU rate, not seconds, and a
// cluster may serve none.
func (p *Provider) Metrics(ctx context.Context, h sbx.Handle) (sbx.Metrics, error) {
	id, err := handleID(h)
	if err != nil {
		return sbx.Metrics{}, err
	}
	var out strings.Builder
	if err := p.exec(ctx, podName(id), []string{agentBin, "agent", "stats"}, nil, &limited{w: &out, n: 4 << 10}); err != nil {
		return sbx.Metrics{}, fmt.Errorf("measuring sandbox %s: %w", id, err)
	}
	var st apiv1.AgentStats
	if err := json.Unmarshal([]byte(out.String()), &st); err != nil {
		return sbx.Metrics{}, fmt.Errorf("measuring sandbox %s: %q: %w", id, out.String(), err)
	}
	return sbx.Metrics{At: time.Now().UTC(), CPUSeconds: st.CPUSeconds, MemoryBytes: st.MemoryBytes, Processes: st.Processes}, nil
}
