package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbxdev/sbx/internal/kube"
	"github.com/sbxdev/sbx/kubernetes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// The baselines: bare pods of the template's image with the provider's
// RuntimeClass, resources (CPU requested at a quarter of its limit,
// memory as limited), security context and placement, running the image's
// own command, of three kinds:
//
//   - bare: no volume at all, as the provider's pod has no service-account
//     token: the fastest a pod of the node can be Ready;
//   - kubectl run: the pod as `kubectl run` makes it, with the namespace's
//     service-account token, a projected volume: any volume makes the
//     kubelet wait for the volume manager, which checks every 300 ms;
//   - claim: bare, with a claim like a sandbox's working directory (the
//     same size and StorageClass, mounted at /workspace), the pod made
//     once a watch sees the claim Bound, as the provider makes it (a pod
//     made at once may meet the kubelet before its claim is Bound, and
//     then waits out the kubelet's backoff of 10 s: kubernetes/bind.go).
//
// Each is timed from its first create call until a watch from the pod's
// creation sees its Ready condition.
type podKind int

const (
	podBare podKind = iota
	podToken
	podClaim
)

// kubeCaps are the capabilities the provider gives a sandbox's root.
var kubeCaps = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "NET_BIND_SERVICE", "SETGID", "SETUID"}

// podRun creates a bare pod named name of kind (and its claim) and times
// it until it is Ready.
func (k *kubeLab) podRun(ctx context.Context, name string, kind podKind) (time.Duration, error) {
	pod := k.barePod(name, kind)
	start := time.Now()
	k.seen.start(name, start)
	if kind == podClaim {
		c, err := k.client.CoreV1().PersistentVolumeClaims(k.k.Namespace).Create(ctx, k.bareClaim(name), metav1.CreateOptions{})
		if err != nil {
			return 0, fmt.Errorf("creating claim %s: %w", name, err)
		}
		if err := waitBound(ctx, k.client, c); err != nil {
			return 0, err
		}
	}
	created, err := k.client.CoreV1().Pods(k.k.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("creating pod %s: %w", name, err)
	}
	if err := waitReady(ctx, k.client, created); err != nil {
		return 0, err
	}
	took := time.Since(start)
	k.seen.mark(name, markReady)
	return took, nil
}

func (k *kubeLab) barePod(name string, kind podKind) *corev1.Pod {
	no, root := false, int64(0)
	limits := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(kubeMilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(kubeMemoryMB<<20, resource.BinarySI),
	}
	requests := limits.DeepCopy()
	requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(kubeMilliCPU*kubernetes.DefaultCPURequestPercent/100, resource.DecimalSI)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: k.name}},
		Spec: corev1.PodSpec{
			RuntimeClassName:             &k.k.RuntimeClass,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			Containers: []corev1.Container{{
				Name: "sandbox", Image: k.k.Template, ImagePullPolicy: corev1.PullIfNotPresent,
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: &root, RunAsGroup: &root, RunAsNonRoot: &no, AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: kubeCaps},
				},
			}},
		},
	}
	switch kind {
	case podToken:
		pod.Spec.AutomountServiceAccountToken = nil // the default: mounted
	case podClaim:
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/workspace"}}
		pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	}
	return pod
}

// bareClaim is a claim as the provider makes a sandbox's.
func (k *kubeLab) bareClaim(name string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: k.name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(kubernetes.DefaultWorkSize)}},
		},
	}
	if k.k.StorageClass != "" {
		c.Spec.StorageClassName = &k.k.StorageClass
	}
	return c
}

// waitBound waits, at most two minutes, for a watch from the claim's
// creation to see it Bound.
func waitBound(ctx context.Context, client *kube.Client, c *corev1.PersistentVolumeClaim) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := client.CoreV1().PersistentVolumeClaims(c.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", c.Name).String(), ResourceVersion: c.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watching claim %s: %w", c.Name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("claim %s is not Bound: %w", c.Name, ctx.Err())
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return fmt.Errorf("the watch of claim %s ended before it was Bound", c.Name)
			}
			if cur, ok := ev.Object.(*corev1.PersistentVolumeClaim); ok && cur.Status.Phase == corev1.ClaimBound {
				return nil
			}
		}
	}
}

// waitReady waits, at most two minutes, for a watch from pod's creation
// to see its Ready condition; a pod that ends first fails.
func waitReady(ctx context.Context, client *kube.Client, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pods := client.CoreV1().Pods(pod.Namespace)
	rv := pod.ResourceVersion
	for {
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: rv})
		if err != nil {
			return fmt.Errorf("watching pod %s: %w", pod.Name, err)
		}
		done, last, err := untilReady(ctx, w)
		w.Stop()
		if done || err != nil {
			return err
		}
		if last != "" {
			rv = last // the watch ended: go on from what it saw
		}
	}
}

// untilReady follows a watch until its pod is Ready (true), it fails, or
// the watch ends (false, and the last version seen).
func untilReady(ctx context.Context, w watch.Interface) (bool, string, error) {
	var rv string
	for {
		select {
		case <-ctx.Done():
			return false, rv, fmt.Errorf("the pod is not Ready: %w", ctx.Err())
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return false, rv, nil
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = pod.ResourceVersion
			switch {
			case ev.Type == watch.Deleted:
				return false, rv, fmt.Errorf("pod %s was deleted before it was Ready", pod.Name)
			case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
				return false, rv, fmt.Errorf("pod %s ended (%s) before it was Ready", pod.Name, pod.Status.Phase)
			case podReady(pod):
				return true, rv, nil
			}
		}
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podRemove deletes a bare pod and its claim, if any, at once.
func (k *kubeLab) podRemove(ctx context.Context, name string) error {
	zero := int64(0)
	err := k.client.CoreV1().Pods(k.k.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = k.client.CoreV1().PersistentVolumeClaims(k.k.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// settle waits until the namespace holds no pod and no claim, and no
// volume is bound to a claim of it: the next turn meets an idle node.
func (k *kubeLab) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		left, err := leftIn(ctx, k.client, k.k.Namespace)
		if err != nil || left == "" {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still holds %s: %w", k.k.Namespace, left, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leftIn names something of namespace ns that is still there: a pod, a
// claim, or a volume bound to one of its claims; "" when none is.
func leftIn(ctx context.Context, client *kube.Client, ns string) (string, error) {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	if len(pods.Items) > 0 {
		return "pod " + pods.Items[0].Name, nil
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	if len(claims.Items) > 0 {
		return "claim " + claims.Items[0].Name, nil
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, pv := range pvs.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
			return "volume " + pv.Name + " (" + string(pv.Status.Phase) + ")", nil
		}
	}
	return "", nil
}

// deleteNamespace deletes ns and waits until it and the volumes of its
// claims are gone.
func deleteNamespace(ctx context.Context, client *kube.Client, ns string) error {
	zero := int64(0)
	// The pods first, at once: the namespace's deletion would give them their grace period.
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	for {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		var left string
		if apierrors.IsNotFound(err) {
			left, err = leftIn(ctx, client, ns)
			if err == nil && left == "" {
				return nil
			}
		} else if err == nil {
			left = "the namespace"
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s: %s is left: %w", ns, left, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
