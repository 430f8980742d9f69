package kubernetes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sbxdev/sbx"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

var (
	getOpts = metav1.GetOptions{}
	listOne = metav1.ListOptions{Limit: 1}
	// gone deletes at once: a sandbox's processes keep nothing a grace
	// period would save (its working directory is on its claim), and a
	// resume waits for the old pod's name to be free.
	zero = int64(0)
	gone = metav1.DeleteOptions{GracePeriodSeconds: &zero}
)

// Create implements sbx.Provider: the working directory's claim, the pod,
// its wait to run, the token handed to its agent. A failure after the
// claim removes both.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (_ sbx.Instance, err error) {
	if err := ctx.Err(); err != nil {
		return sbx.Instance{}, err
	}
	id := spec.ProviderSandboxID
	if !idPattern.MatchString(id) {
		return sbx.Instance{}, fmt.Errorf("sandbox ID %q is not one the kubernetes provider accepts", id)
	}
	if err := unsupported(spec); err != nil {
		return sbx.Instance{}, err
	}
	from, err := p.source(spec)
	if err != nil {
		return sbx.Instance{}, err
	}
	pod := p.pod(spec, from)
	claim, err := p.claim(spec, pod)
	if err != nil {
		return sbx.Instance{}, err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return sbx.Instance{}, err
	}
	defer end()
	made, err := p.claims().Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) { // another's: left as it is
			return sbx.Instance{}, sbx.Errorf(sbx.EConflict, "sandbox %s already has a claim (%s)", id, podName(id))
		}
		return sbx.Instance{}, fmt.Errorf("creating the working directory's claim: %w", err)
	}
	defer func() {
		if err != nil {
			p.remove(context.WithoutCancel(ctx), id)
		}
	}()
	if err := p.waitBound(ctx, made); err != nil {
		return sbx.Instance{}, err
	}
	if err := p.boot(ctx, pod, spec.AccessToken); err != nil {
		return sbx.Instance{}, err
	}
	return sbx.Instance{SandboxID: spec.SandboxID, ProviderSandboxID: id, Status: sbx.InstanceRunning, Handle: sbx.IDHandle(id)}, nil
}

// Admit implements sbx.Admitter: what the provider does not start
// sandboxes from, and a template that is neither the store's nor an image
// reference, are refused before any row is written.
func (p *Provider) Admit(_ context.Context, spec sbx.Spec) error {
	if err := unsupported(spec); err != nil {
		return err
	}
	_, err := p.source(spec)
	return err
}

// unsupported refuses what the provider does not start sandboxes from.
func unsupported(spec sbx.Spec) error {
	if spec.Snapshot != nil || len(spec.Volumes) > 0 {
		return sbx.Errorf(sbx.EUnsupported, "provider kubernetes starts sandboxes from templates and images only: no snapshots or volumes")
	}
	return nil
}

// boot creates pod, waits for it to run and hands its agent the token.
func (p *Provider) boot(ctx context.Context, pod *corev1.Pod, token string) error {
	created, err := p.pods().Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return sbx.Errorf(sbx.EConflict, "sandbox %s already has a pod", pod.Labels[LabelID])
	}
	if err != nil {
		return fmt.Errorf("creating the pod: %w", err)
	}
	running, err := p.waitRunning(ctx, created)
	if err != nil {
		return err
	}
	id := pod.Labels[LabelID]
	p.addrs.Store(id, running.Status.PodIP)
	if err := p.giveToken(ctx, pod.Name, token); err != nil {
		return fmt.Errorf("handing the agent its token: %w", err)
	}
	return nil
}

// waitRunning waits for a pod to run: it fails at once when the pod ends
// or its image cannot be had, and after StartTimeout (or ctx's end) with
// what kept it pending: the scheduler's reason, an unbound claim, the
// image pull.
func (p *Provider) waitRunning(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	last := pod
	err := p.waitPod(wctx, pod.Name, pod.ResourceVersion, func(cur *corev1.Pod) (bool, error) {
		if cur == nil {
			return false, fmt.Errorf("pod %s was deleted before it ran", pod.Name)
		}
		last = cur
		switch cur.Status.Phase {
		case corev1.PodRunning:
			return true, nil
		case corev1.PodFailed, corev1.PodSucceeded:
			return false, fmt.Errorf("pod %s ended before it ran: %s", pod.Name, ended(cur))
		}
		if why := hopeless(cur); why != "" {
			return false, fmt.Errorf("pod %s cannot run: %s", pod.Name, why)
		}
		return false, nil
	})
	if err != nil && wctx.Err() != nil {
		return nil, fmt.Errorf("pod %s did not run within %s: %s", pod.Name, p.cfg.StartTimeout, p.pending(context.WithoutCancel(ctx), last))
	}
	return last, err
}

// hopeless says why a pending pod will not run without someone's help:
// an image that cannot be pulled or a container that cannot be made.
func hopeless(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
				return w.Reason + ": " + w.Message
			}
		}
	}
	return ""
}

// pending says what keeps a pod from running, for the sandbox's
// diagnostic: the scheduler's reason (insufficient CPU, no node for its
// RuntimeClass), else its containers' waiting reasons, else the latest
// warning event about it.
func (p *Provider) pending(ctx context.Context, pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "not scheduled (" + c.Reason + "): " + c.Message
		}
	}
	var why []string
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why = append(why, strings.TrimSpace(w.Reason+": "+w.Message))
		}
	}
	if len(why) > 0 {
		return strings.Join(why, "; ")
	}
	if ev := p.lastWarning(ctx, pod.Name); ev != "" {
		return ev
	}
	return "it is " + string(pod.Status.Phase)
}

// lastWarning is the latest warning event about the pod named name.
func (p *Provider) lastWarning(ctx context.Context, name string) string {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name, "type": corev1.EventTypeWarning}.AsSelector().String()
	evs, err := p.client.CoreV1().Events(p.cfg.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	last := evs.Items[0]
	for _, ev := range evs.Items[1:] {
		if ev.LastTimestamp.After(last.LastTimestamp.Time) {
			last = ev
		}
	}
	return last.Reason + ": " + last.Message
}

// ended says how a pod that ran ended: its container's reason and exit code.
func ended(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg := fmt.Sprintf("%s, exit code %d", t.Reason, t.ExitCode)
			if t.Message != "" {
				msg += ": " + strings.TrimSpace(t.Message)
			}
			return msg
		}
	}
	return cmp.Or(pod.Status.Reason+" "+pod.Status.Message, string(pod.Status.Phase))
}

// waitPod calls done with the pod named name each time it changes (nil
// once it is gone), from the version rv on, until done says so or fails.
func (p *Provider) waitPod(ctx context.Context, name, rv string, done func(*corev1.Pod) (bool, error)) error {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		if rv == "" {
			pod, err := p.pods().Get(ctx, name, getOpts)
			switch {
			case apierrors.IsNotFound(err):
				if ok, err := done(nil); ok || err != nil {
					return err
				}
			case err != nil:
				return err
			default:
				if ok, err := done(pod); ok || err != nil {
					return err
				}
				rv = pod.ResourceVersion
			}
		}
		w, err := p.pods().Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: false})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rv = "" // too old a version: read it again
			continue
		}
		ok, err := follow(ctx, w, done)
		w.Stop()
		if ok || err != nil {
			return err
		}
		rv = ""
	}
}

// follow feeds a watch's pods to done until it says so, fails, or the
// watch ends (false, nil: read again).
func follow(ctx context.Context, w watch.Interface, done func(*corev1.Pod) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return false, nil
			}
			pod, _ := ev.Object.(*corev1.Pod)
			if pod == nil {
				continue
			}
			if ev.Type == watch.Deleted {
				pod = nil
			}
			if ok, err := done(pod); ok || err != nil {
				return ok, err
			}
		}
	}
}

// Pause implements sbx.Provider: the pod is deleted, the claim kept.
func (p *Provider) Pause(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return err
	}
	defer end()
	if _, err := p.claims().Get(ctx, podName(id), getOpts); err != nil {
		return p.missing(err, id)
	}
	pod, err := p.pods().Get(ctx, podName(id), getOpts)
	if apierrors.IsNotFound(err) {
		return sbx.Errorf(sbx.EConflict, "sandbox %s is already paused: it has no pod", id)
	}
	if err != nil {
		return err
	}
	p.addrs.Delete(id)
	p.tunnel.close(id)
	return p.deletePod(ctx, pod)
}

// deletePod deletes a pod and waits until it is gone.
func (p *Provider) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := p.pods().Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return p.waitPod(ctx, pod.Name, "", func(cur *corev1.Pod) (bool, error) { return cur == nil || cur.UID != pod.UID, nil })
}

// Resume implements sbx.Provider, which cannot resume here without the
// token (ResumeWithToken).
func (p *Provider) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	return h, errors.New("a kubernetes sandbox resumes on a new pod, whose agent needs the access token: ResumeWithToken")
}

// ResumeWithToken implements sbx.TokenResumer: a new pod on the paused
// sandbox's claim, from the spec the claim keeps.
func (p *Provider) ResumeWithToken(ctx context.Context, h sbx.Handle, token string) (sbx.Handle, error) {
	id, err := handleID(h)
	if err != nil {
		return h, err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return h, err
	}
	defer end()
	claim, err := p.claims().Get(ctx, podName(id), getOpts)
	if err != nil {
		return h, p.missing(err, id)
	}
	if _, err := p.pods().Get(ctx, podName(id), getOpts); err == nil {
		return h, sbx.Errorf(sbx.EConflict, "sandbox %s is running: it has a pod", id)
	}
	pod, err := podOf(claim)
	if err != nil {
		return h, err
	}
	if err := p.boot(ctx, pod, token); err != nil {
		if ctx.Err() == nil {
			p.pods().Delete(context.WithoutCancel(ctx), pod.Name, gone)
		}
		return h, err
	}
	return h, nil
}

// missing is the error of an operation on a sandbox whose claim is gone.
func (p *Provider) missing(err error, id string) error {
	if apierrors.IsNotFound(err) {
		return sbx.Errorf(sbx.ENotFound, "sandbox %s has no claim in namespace %s: it is gone", id, p.cfg.Namespace)
	}
	return err
}

// Kill implements sbx.Provider: the pod and the claim are deleted.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return err
	}
	defer end()
	return p.remove(ctx, id)
}

// remove deletes id's pod and claim, gone or not.
func (p *Provider) remove(ctx context.Context, id string) error {
	p.addrs.Delete(id)
	p.tunnel.close(id)
	if err := p.pods().Delete(ctx, podName(id), gone); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := p.claims().Delete(ctx, podName(id), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// List implements sbx.Provider: this instance's claims, each running,
// dead or (without a pod) paused; a pod without a claim is a create that
// did not finish, listed as dead so that reconcile removes it. What is
// being deleted is not listed.
func (p *Provider) List(ctx context.Context) ([]sbx.Instance, error) {
	sel := metav1.ListOptions{LabelSelector: labels.Set{LabelInstance: p.cfg.Name}.String()}
	claims, err := p.claims().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	pods, err := p.pods().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil { // a pod on its way out is gone
			byName[pods.Items[i].Name] = &pods.Items[i]
		}
	}
	var out []sbx.Instance
	add := func(l map[string]string, status sbx.InstanceStatus) {
		if id := l[LabelID]; idPattern.MatchString(id) {
			out = append(out, sbx.Instance{SandboxID: l[LabelSandbox], ProviderSandboxID: id, Status: status, Handle: sbx.IDHandle(id)})
		}
	}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil { // killed: it waits only for its pod to go
			continue
		}
		pod, ok := byName[c.Name]
		delete(byName, c.Name)
		switch {
		case !ok:
			add(c.Labels, sbx.InstancePaused)
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			add(c.Labels, sbx.InstanceDead)
		default:
			add(c.Labels, sbx.InstanceRunning)
		}
	}
	for _, pod := range byName {
		add(pod.Labels, sbx.InstanceDead)
	}
	return out, nil
}
