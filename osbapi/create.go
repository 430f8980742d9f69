package osbapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// createRequest is OpenSandbox's CreateSandboxRequest.
type createRequest struct {
	Image            *imageSpec        `json:"image"`
	SnapshotID       string            `json:"snapshotId"`
	Timeout          *int64            `json:"timeout"`
	ResourceLimits   map[string]string `json:"resourceLimits"`
	ResourceRequests map[string]string `json:"resourceRequests"`
	Env              map[string]string `json:"env"`
	Metadata         map[string]string `json:"metadata"`
	Entrypoint       []string          `json:"entrypoint"`
	NetworkPolicy    *networkPolicy    `json:"networkPolicy"`
	CredentialProxy  *credentialProxy  `json:"credentialProxy"`
	SecureAccess     *bool             `json:"secureAccess"`
	Volumes          []volume          `json:"volumes"`
	Extensions       map[string]string `json:"extensions"`
	Platform         *platform         `json:"platform"`
}

type imageSpec struct {
	URI  string     `json:"uri"`
	Auth *imageAuth `json:"auth"`
}

type imageAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type networkPolicy struct {
	DefaultAction string        `json:"defaultAction"`
	Egress        []networkRule `json:"egress"`
}

type networkRule struct {
	Action string `json:"action"`
	Target string `json:"target"`
}

type credentialProxy struct {
	Enabled bool `json:"enabled"`
}

type platform struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// volume is OpenSandbox's Volume: sbx mounts its own named volumes, which
// a pvc backend names.
type volume struct {
	Name      string          `json:"name"`
	Host      json.RawMessage `json:"host"`
	PVC       *pvc            `json:"pvc"`
	OSSFS     json.RawMessage `json:"ossfs"`
	MountPath string          `json:"mountPath"`
	ReadOnly  bool            `json:"readOnly"`
	SubPath   string          `json:"subPath"`
}

type pvc struct {
	ClaimName                  string   `json:"claimName"`
	CreateIfNotExists          *bool    `json:"createIfNotExists"`
	DeleteOnSandboxTermination *bool    `json:"deleteOnSandboxTermination"`
	StorageClass               *string  `json:"storageClass"`
	Storage                    *string  `json:"storage"`
	AccessModes                []string `json:"accessModes"`
}

// idleEntrypoint is the entrypoint the SDKs send when their caller names
// none: a process that only keeps the container alive. An sbx sandbox
// lives without one (its agent is PID 1), so it is the one entrypoint sbx
// takes, and the one a sandbox answers.
var idleEntrypoint = []string{"tail", "-f", "/dev/null"}

// create makes a sandbox and waits until its agent (execd) answers.
func (s *Server) create(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body createRequest
	if err := decode(r, &body); err != nil {
		return err
	}
	ask, err := s.ask(r, c, body)
	if err != nil {
		return err
	}
	req, err := s.mgr.Request(ask)
	if err != nil {
		return err
	}
	sb, err := s.mgr.Create(r.Context(), c, req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", Prefix+"/v1/sandboxes/"+sb.ProviderSandboxID)
	out := s.sandbox(sb)
	out.Image = nil // the create's answer has no startup source, as OpenSandbox's has none
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

// ask translates a create into sbx's, naming every field sbx cannot honour.
func (s *Server) ask(r *http.Request, c sbx.Caller, b createRequest) (lifecycle.Ask, error) {
	var p sbx.Problems
	ask := lifecycle.Ask{Timeout: b.Timeout, Env: b.Env, Metadata: b.Metadata, WaitReady: true}
	switch {
	case b.SnapshotID != "":
		p.Add("snapshotId", "snapshotId is not supported: sbx's OpenSandbox API starts sandboxes from images (sbx templates or registry references)")
	case b.Image == nil || b.Image.URI == "":
		p.Add("image.uri", "image.uri is required: an sbx template such as \"base\", or an image's registry reference such as docker.io/library/python:3.11")
	default:
		s.image(r, c, &p, *b.Image, &ask)
	}
	if b.Entrypoint != nil && !slices.Equal(b.Entrypoint, idleEntrypoint) {
		p.Add("entrypoint", "entrypoint %q is not supported: an sbx sandbox runs its template's start command; give %q (the SDKs' default) and start your process with a background command",
			strings.Join(b.Entrypoint, " "), strings.Join(idleEntrypoint, " "))
	}
	lifecycle.CheckEnv(&p, "env", b.Env) // as Request will, under OpenSandbox's name
	resources(&p, "resourceLimits", b.ResourceLimits, &ask)
	if len(b.ResourceRequests) > 0 {
		p.Add("resourceRequests", "resourceRequests is not supported: an sbx sandbox is given what resourceLimits asks for")
	}
	if b.NetworkPolicy != nil {
		e := egress(&p, *b.NetworkPolicy)
		ask.Egress = &e
	}
	if b.CredentialProxy != nil && b.CredentialProxy.Enabled {
		p.Add("credentialProxy.enabled", "credentialProxy is not supported: sbx intercepts no TLS traffic of sandboxes")
	}
	for _, k := range sortedKeys(b.Extensions) {
		p.Add("extensions."+k, "extensions.%s is not supported by sbx", k)
	}
	if pl := b.Platform; pl != nil && (pl.OS != "linux" || pl.Arch != runtime.GOARCH) {
		p.Add("platform", "platform %s/%s is not supported: this server runs linux/%s sandboxes", pl.OS, pl.Arch, runtime.GOARCH)
	}
	for i, v := range b.Volumes {
		ask.Volumes = append(ask.Volumes, volumeAsk(&p, fmt.Sprintf("volumes[%d]", i), v))
	}
	// secureAccess is honoured either way: an sbx sandbox's execd always
	// takes its access token, and its endpoints answer the headers to send.
	return ask, p.Err()
}

// image makes the create's image a template's name, or an OCI image's
// reference: a uri with no registry or digest ('/', '@') must name an sbx
// template.
func (s *Server) image(r *http.Request, c sbx.Caller, p *sbx.Problems, img imageSpec, ask *lifecycle.Ask) {
	if strings.ContainsAny(img.URI, "/@") {
		ask.Image = &sbx.ImageSpec{Ref: img.URI}
		if a := img.Auth; a != nil {
			ask.Image.Username, ask.Image.Password = a.Username, a.Password
		}
		return
	}
	if img.Auth != nil {
		p.Add("image.auth", "image.auth is for a registry's image: %q names an sbx template", img.URI)
	}
	name, _, _ := strings.Cut(img.URI, ":")
	if _, err := s.mgr.Template(r.Context(), c, name); sbx.ErrorCode(err) == sbx.ENotFound {
		p.Add("image.uri", "image.uri %q names no sbx template of this server; give a template (such as \"base\") or an image's registry reference (docker.io/library/python:3.11)", img.URI)
		return
	}
	ask.TemplateID = img.URI
}

// resources reads OpenSandbox's resource limits (Kubernetes quantities:
// cpu "500m" or "2", memory "512Mi" or "2Gi", ephemeral-storage, gpu).
func resources(p *sbx.Problems, field string, limits map[string]string, ask *lifecycle.Ask) {
	for _, k := range sortedKeys(limits) {
		v, f := limits[k], field+"."+k
		switch k {
		case "cpu":
			cpu, err := cpuQuantity(v)
			if err != nil {
				p.Add(f, "%s %q %v", f, v, err)
			}
			ask.CPU = &cpu
		case "memory":
			mb, err := megabytes(v)
			if err != nil {
				p.Add(f, "%s %q %v", f, v, err)
			}
			ask.MemoryMB = &mb
		case "ephemeral-storage", "disk":
			mb, err := megabytes(v)
			if err != nil {
				p.Add(f, "%s %q %v", f, v, err)
			}
			ask.DiskMB = &mb
		case "gpu", "nvidia.com/gpu":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				p.Add(f, "%s %q must be a whole number of GPUs", f, v)
			}
			ask.GPU = &sbx.GPURequest{Count: n}
		default:
			p.Add(f, "%s is not supported: sbx sizes sandboxes by cpu, memory, ephemeral-storage and gpu", f)
		}
	}
}

// cpuQuantity is a CPU quantity in vCPUs: "2", "0.5" or "500m".
func cpuQuantity(v string) (float64, error) {
	scale := 1.0
	if n, ok := strings.CutSuffix(v, "m"); ok {
		v, scale = n, 1.0/1000
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a positive number of CPUs (\"2\", \"0.5\") or millicores (\"500m\")")
	}
	return f * scale, nil
}

// binarySuffixes and decimalSuffixes are Kubernetes quantities' units.
var (
	binarySuffixes  = map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
	decimalSuffixes = map[string]float64{"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
)

// megabytes is a byte quantity ("512Mi", "2Gi", "1G", "1048576") in MiB,
// rounded up.
func megabytes(v string) (int64, error) {
	num, unit := v, 1.0
	for _, table := range []map[string]float64{binarySuffixes, decimalSuffixes} {
		for suffix, mult := range table {
			if n, ok := strings.CutSuffix(v, suffix); ok && num == v {
				num, unit = n, mult
			}
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a positive quantity of bytes such as \"512Mi\" or \"2Gi\"")
	}
	mb := math.Ceil(f * unit / (1 << 20))
	if mb > math.MaxInt32 {
		return 0, fmt.Errorf("is too large")
	}
	return int64(mb), nil
}

// egress maps OpenSandbox's network policy onto an sbx egress policy: deny
// by default with allow rules is an allow list, allow by default with deny
// rules a deny list; an empty policy allows everything, as OpenSandbox's.
func egress(p *sbx.Problems, n networkPolicy) sbx.Egress {
	var allow, deny []string
	for i, r := range n.Egress {
		switch r.Action {
		case "allow":
			allow = append(allow, r.Target)
		case "deny":
			deny = append(deny, r.Target)
		default:
			f := fmt.Sprintf("networkPolicy.egress[%d].action", i)
			p.Add(f, "%s %q must be allow or deny", f, r.Action)
		}
	}
	var e sbx.Egress
	switch n.DefaultAction {
	case "deny":
		e = sbx.Egress{Mode: sbx.EgressAllow, Allow: allow, Deny: deny}
		if len(allow) == 0 {
			e = sbx.Egress{Mode: sbx.EgressNone}
		}
	case "allow":
		e = sbx.Egress{Mode: sbx.EgressInternet, Deny: deny} // its allow rules allow what is allowed already
	case "":
		if len(n.Egress) > 0 {
			p.Add("networkPolicy.defaultAction", "networkPolicy.defaultAction is required with egress rules: allow or deny")
		}
		e = sbx.Egress{Mode: sbx.EgressInternet}
	default:
		p.Add("networkPolicy.defaultAction", "networkPolicy.defaultAction %q must be allow or deny", n.DefaultAction)
		return e
	}
	return sbx.CheckEgress(p, "networkPolicy.egress", e)
}

// volumeAsk maps a volume onto an sbx volume's mount: a pvc's claimName is
// the sbx volume's name (made beforehand: POST /api/v1/volumes).
func volumeAsk(p *sbx.Problems, field string, v volume) lifecycle.VolumeAsk {
	switch {
	case len(v.Host) > 0:
		p.Add(field+".host", "%s.host is not supported: sbx mounts its own volumes (pvc.claimName names one)", field)
	case len(v.OSSFS) > 0:
		p.Add(field+".ossfs", "%s.ossfs is not supported: sbx mounts its own volumes (pvc.claimName names one)", field)
	case v.PVC == nil:
		p.Add(field+".pvc", "%s.pvc is required: its claimName names the sbx volume to mount", field)
	default:
		c := v.PVC
		if c.DeleteOnSandboxTermination != nil && *c.DeleteOnSandboxTermination || c.StorageClass != nil || c.Storage != nil || len(c.AccessModes) > 0 {
			p.Add(field+".pvc", "%s.pvc's deleteOnSandboxTermination, storageClass, storage and accessModes are not supported: an sbx volume is made and sized beforehand (POST /api/v1/volumes)", field)
		}
	}
	if v.SubPath != "" {
		p.Add(field+".subPath", "%s.subPath is not supported: sbx mounts a volume whole", field)
	}
	ask := lifecycle.VolumeAsk{Path: v.MountPath, ReadOnly: v.ReadOnly}
	if v.PVC != nil {
		ask.Name = v.PVC.ClaimName
	}
	return ask
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
