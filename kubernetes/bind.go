package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// waitBound waits until a new claim is Bound where its StorageClass binds
// at once (Immediate), before its pod is made. The scheduler places a pod
// once its claim names a volume, but the kubelet refuses to mount a claim
// whose phase is not Bound yet, which the volume controller sets a step
// later: the pod's first sync fails and the kubelet tries again only after
// its backoff of about 10 s (10 creates at once met it in most pods:
// docs/BENCHMARKS.md). A class that binds at the first consumer, or one
// the provider may not read, is not waited for.
func (p *Provider) waitBound(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	if c.Status.Phase == corev1.ClaimBound || c.Spec.StorageClassName == nil || !p.bindsAtOnce(ctx, *c.Spec.StorageClassName) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	w, err := p.claims().Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", c.Name).String(), ResourceVersion: c.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watching claim %s: %w", c.Name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("claim %s of StorageClass %s was not bound within %s: %s", c.Name, *c.Spec.StorageClassName, p.cfg.StartTimeout, p.lastClaimWarning(context.WithoutCancel(ctx), c.Name))
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return nil // the pod's wait names what keeps it pending
			}
			if cur, ok := ev.Object.(*corev1.PersistentVolumeClaim); ok && (ev.Type == watch.Deleted || cur.Status.Phase != corev1.ClaimPending) {
				return nil
			}
		}
	}
}

// bindsAtOnce reports whether StorageClass name binds its claims when they
// are made (Immediate, the default mode), as read once.
func (p *Provider) bindsAtOnce(ctx context.Context, name string) bool {
	if v, ok := p.classes.Load(name); ok {
		return v.(bool)
	}
	sc, err := p.client.StorageV1().StorageClasses().Get(ctx, name, getOpts)
	if err != nil {
		return false // not read: a Role of the namespace only, or no such class (the pod's wait says so)
	}
	now := sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate
	p.classes.Store(name, now)
	return now
}

// lastClaimWarning is the latest warning event about the claim named name.
func (p *Provider) lastClaimWarning(ctx context.Context, name string) string {
	sel := fields.Set{"involvedObject.kind": "PersistentVolumeClaim", "involvedObject.name": name, "type": corev1.EventTypeWarning}.AsSelector().String()
	evs, err := p.client.CoreV1().Events(p.cfg.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(evs.Items) == 0 {
		return "it is Pending"
	}
	last := evs.Items[0]
	for _, ev := range evs.Items[1:] {
		if ev.LastTimestamp.After(last.LastTimestamp.Time) {
			last = ev
		}
	}
	return last.Reason + ": " + last.Message
}
