package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/template"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The agent inside every pod: the sbx-agent image's binary, mounted at
// agentDir, which reads its token from tokenFIFO.
const (
	agentDir   = "/.sbx"
	agentBin   = agentDir + "/sbx" // as on the local and docker providers
	tokenFIFO  = "/run/sbx-agent/token"
	container  = "sandbox"
	defaultDir = "/workspace" // the agent's default working directory
	// gpuResource is the extended resource of NVIDIA's device plugin.
	gpuResource corev1.ResourceName = "nvidia.com/gpu"
)

// caps are what a sandbox's root may do: the local and docker providers'
// set (what the agent needs to run commands as any user of the image and
// give new files to them); no privilege escalation keeps a command started
// as another user from getting any back.
var caps = []corev1.Capability{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "NET_BIND_SERVICE", "SETGID", "SETUID"}

// origin is what a sandbox starts from: an image, and what the agent is
// told of it.
type origin struct {
	image   string
	store   bool   // a template of sbx's store, exported as an image
	user    string // the agent's default user; "": root
	workdir string // the working directory, the claim's mount
	start   string // the template's start command; "": none
}

// source finds spec's image: an image the create names is that image; a
// template of sbx's store is
// <ImagePrefix>sbx-template/<name>:<version>, with its user, working
// directory and start command; any other template ID is an image
// reference, whose user and working directory are the agent's defaults.
func (p *Provider) source(spec sbx.Spec) (origin, error) {
	if spec.Image != nil {
		return origin{image: spec.Image.Ref, workdir: defaultDir}, nil
	}
	if strings.HasPrefix(spec.TemplateID, sbx.TemplateIDPrefix) {
		return origin{}, sbx.Errorf(sbx.ENotFound, "template %s is a project's, built on a local host: provider kubernetes runs the server's templates and images", spec.TemplateID)
	}
	t, err := p.cfg.Templates.At(spec.TemplateID, spec.TemplateVersion)
	switch {
	case err == nil:
		return origin{image: p.cfg.ImagePrefix + template.ImageRepo + "/" + t.Name + ":" + t.Version, store: true,
			user: t.User, workdir: cmp.Or(t.Workdir, defaultDir), start: t.StartCmd}, nil
	case spec.TemplateVersion != "" || !errors.Is(err, template.ErrNotBuilt) && template.CheckName(spec.TemplateID) == nil:
		return origin{}, sbx.Errorf(sbx.ENotFound, "%s", err.Error())
	case !imageRef(spec.TemplateID):
		return origin{}, sbx.Errorf(sbx.EInvalid, "template %q is neither a template of this server nor an image reference", spec.TemplateID)
	}
	return origin{image: spec.TemplateID, workdir: defaultDir}, nil
}

// imageRef reports whether s can be an image reference: no spaces or
// control characters, no leading dash.
func imageRef(s string) bool {
	if s == "" || len(s) > 255 || strings.HasPrefix(s, "-") {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// labels are the labels of a sandbox's pod and claim.
func (p *Provider) labels(spec sbx.Spec) map[string]string {
	l := map[string]string{LabelSandbox: spec.SandboxID, LabelID: spec.ProviderSandboxID, LabelInstance: p.cfg.Name}
	for k, v := range map[string]string{LabelOrg: spec.OrgID, LabelProject: spec.ProjectID} {
		if v != "" && labelValue.MatchString(v) {
			l[k] = v
		}
	}
	return l
}

// podAnnotation is the claim's annotation that keeps its sandbox's pod, for
// a resume to boot again: what the create asked for (env included, as a
// pod spec holds it, visible to whoever may read the namespace's claims,
// who may read its pods too).
const podAnnotation = "sbx.dev/pod"

// claim is a sandbox's working directory: a claim of DiskMB (or
// WorkSize), keeping pod.
func (p *Provider) claim(spec sbx.Spec, pod *corev1.Pod) (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(p.cfg.WorkSize)
	if err != nil {
		return nil, fmt.Errorf("work size %q: %w", p.cfg.WorkSize, err)
	}
	if spec.Resources.DiskMB > 0 {
		size = *resource.NewQuantity(spec.Resources.DiskMB<<20, resource.BinarySI)
	}
	kept, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: podName(spec.ProviderSandboxID), Labels: p.labels(spec), Annotations: map[string]string{podAnnotation: string(kept)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if p.cfg.StorageClass != "" {
		c.Spec.StorageClassName = &p.cfg.StorageClass
	}
	return c, nil
}

// pod is a sandbox's pod: the agent first, as root (it runs commands as
// the template's user), the resources, env, labels and placement.
func (p *Provider) pod(spec sbx.Spec, from origin) *corev1.Pod {
	var env []corev1.EnvVar
	if from.store { // the environment of a template tree, which its image has too
		for _, kv := range template.BaseEnv {
			k, v, _ := strings.Cut(kv, "=")
			env = append(env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: spec.Env[k]})
	}
	args := []string{agentBin, "agent", "--port", fmt.Sprint(apiv1.AgentPort), "--token-fifo", tokenFIFO, "--workdir", from.workdir}
	for _, f := range [][2]string{{"--user", from.user}, {"--start", from.start}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	limits := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(spec.Resources.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(spec.Resources.MemoryMB<<20, resource.BinarySI),
	}
	if g := spec.Resources.GPU; g != nil && g.Count > 0 { // a share of one card is one card here; the ledger bills the share
		limits[gpuResource] = *resource.NewQuantity(int64(g.Count), resource.DecimalSI)
	}
	requests := limits.DeepCopy()
	requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(1, spec.Resources.MilliCPU*p.cfg.CPURequestPercent/100), resource.DecimalSI)
	no, root := false, int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(spec.ProviderSandboxID), Labels: p.labels(spec)},
		Spec: corev1.PodSpec{
			RuntimeClassName:             &p.cfg.RuntimeClass,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			Hostname:                     spec.ProviderSandboxID,
			PriorityClassName:            p.cfg.PriorityClass,
			NodeSelector:                 p.cfg.NodeSelector,
			Tolerations:                  p.cfg.Tolerations,
			Containers: []corev1.Container{{
				Name: container, Image: from.image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: args, Env: env,
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "agent", MountPath: agentDir, ReadOnly: true},
					{Name: "work", MountPath: from.workdir},
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: &root, RunAsGroup: &root, RunAsNonRoot: &no, AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: caps},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "agent", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: p.cfg.AgentImage, PullPolicy: corev1.PullIfNotPresent}}},
				{Name: "work", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: podName(spec.ProviderSandboxID)}}},
			},
		},
	}
	return pod
}

// podOf is the pod a claim keeps for its sandbox.
func podOf(c *corev1.PersistentVolumeClaim) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(c.Annotations[podAnnotation]), &pod); err != nil || pod.Name != c.Name || len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("claim %s keeps no pod of its sandbox", c.Name)
	}
	return &pod, nil
}

// ResolveImage implements sbx.ImageStarter: the cluster pulls an image a
// create names (with its nodes' credentials and the namespace's pull
// secrets), so sbx does not ask the registry: the reference is used as
// given, a tag not pinned to a digest. A create's own credentials are
// refused: giving them to the cluster would need a Secret, which serve may
// not make there.
func (p *Provider) ResolveImage(_ context.Context, field string, img sbx.ImageSpec) (sbx.ImageSpec, error) {
	if img.Username != "" || img.Password != "" {
		return img, sbx.Invalid(field+".credentials", "provider kubernetes takes no registry credentials: the cluster pulls with its own (a pull secret of the sandbox namespace)")
	}
	if !imageRef(img.Ref) {
		return img, sbx.Invalid(field, "%q is not an image reference", img.Ref)
	}
	return img, nil
}
