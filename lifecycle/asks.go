package lifecycle

import (
	"github.com/google/uuid"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// What a caller asks for a sandbox, checked and completed here for every
// surface: a create (Ask → Request), a runtime's configuration
// (RuntimeChange → Runtimes.Configure) and a runtime's start (StartResources).
// Each check adds its problems under the field name it is given, the
// surface's own name for the field, so that one answer names every problem.

// Limits bound what one sandbox may ask for, and fill in what it leaves out.
type Limits struct {
	MaxCPU          float64 // vCPU (16)
	MaxMemoryMB     int64   // (65536)
	MaxDiskMB       int64   // the largest writable layer (DefaultDiskMB)
	DefaultCPU      float64 // (2)
	DefaultMemoryMB int64   // (512)
	DefaultDiskMB   int64   // the provider's cap (10240)
}

// withDefaults fills the limits left zero.
func (l Limits) withDefaults() Limits {
	if l.MaxCPU == 0 {
		l.MaxCPU = 16
	}
	if l.MaxMemoryMB == 0 {
		l.MaxMemoryMB = 65536
	}
	if l.DefaultCPU == 0 {
		l.DefaultCPU = 2
	}
	if l.DefaultMemoryMB == 0 {
		l.DefaultMemoryMB = 512
	}
	if l.DefaultDiskMB == 0 {
		l.DefaultDiskMB = 10 << 10
	}
	l.MaxDiskMB = max(l.MaxDiskMB, l.DefaultDiskMB)
	return l
}

// Limits are the manager's, defaults filled.
func (m *Manager) Limits() Limits { return m.cfg.Limits }

// gpuTypePattern is what a GPU type looks like.
var gpuTypePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Bounds on what one create may hold.
const (
	maxMetadata     = 64
	maxMetaKeyBytes = 128
	maxMetaValBytes = 1024
	maxGPUCount     = 8
)

// Ask is a create as a caller asks for it: unchecked, nil where left out.
type Ask struct {
	TemplateID       string
	Image            *sbx.ImageSpec // in place of TemplateID: an OCI image and its pull's credentials
	SnapshotID       string         // in place of TemplateID: a snapshot to start from, with its sizes
	Volumes          []VolumeAsk
	WarmPool         string // prefer (""), require or bypass
	Kind             string
	Timeout          *int64 // seconds
	CPU              *float64
	MemoryMB, DiskMB *int64
	GPU              *sbx.GPURequest // a zero Count is 1, a zero Fraction 100
	Env, Metadata    map[string]string
	Egress           *sbx.Egress // nil: the template's default, else the server's
	WaitReady        bool
	AutoPause        bool
	Preview          *PreviewAsk
	Ports            []int  // the ports it serves, listed with their preview URLs
	Provider         string // "": the server's default
}

// PreviewAsk is a sandbox's preview policy as a caller asks for it.
type PreviewAsk struct {
	Access string // "private" (default) or "public"
	Host   string // "preview" (default) or "localhost"
	Wake   *bool  // default true
}

// CheckPreview checks a preview policy asked for in field and answers it.
func CheckPreview(p *sbx.Problems, field string, a PreviewAsk) sbx.Preview {
	var out sbx.Preview
	switch a.Access {
	case "", "private":
	case "public":
		out.Public = true
	default:
		p.Add(field+".access", "access %q must be private or public", a.Access)
	}
	switch a.Host {
	case "", "preview":
	case "localhost":
		out.LocalHost = true
	default:
		p.Add(field+".host", "host %q must be preview or localhost", a.Host)
	}
	out.NoWake = a.Wake != nil && !*a.Wake
	return out
}

// Request checks a create and fills in what it leaves out; every problem
// is reported, each under the field it concerns.
func (m *Manager) Request(a Ask) (CreateRequest, error) {
	var p sbx.Problems
	l := m.cfg.Limits
	req := CreateRequest{TemplateID: a.TemplateID, Image: a.Image, Kind: sbx.Kind(a.Kind), WaitReady: a.WaitReady, AutoPause: a.AutoPause,
		Env: a.Env, Metadata: a.Metadata, SnapshotID: a.SnapshotID, Volumes: a.Volumes, Provider: a.Provider}
	switch {
	case a.SnapshotID != "" && (a.Image != nil || a.TemplateID != ""):
		p.Add("snapshotID", "give one of templateID, image and snapshotID")
	case a.SnapshotID != "":
		if _, err := uuid.Parse(a.SnapshotID); err != nil {
			p.Add("snapshotID", "snapshotID %q is not a snapshot's ID", a.SnapshotID)
		}
		if a.CPU != nil || a.MemoryMB != nil || a.DiskMB != nil || a.GPU != nil {
			p.Add("snapshotID", "a sandbox from a snapshot has the snapshot's cpu, memoryMB, diskMB and gpu: give none of them")
		}
		if len(a.Volumes) > 0 {
			p.Add("volumes", "a sandbox from a snapshot mounts its source's volumes: give none")
		}
	case a.Image != nil && a.TemplateID != "":
		p.Add("image", "give templateID or image, not both")
	case a.Image != nil:
		checkImage(&p, "image", *a.Image)
	case a.TemplateID == "":
		p.Add("templateID", "templateID is required, for example \"base\" (or give image)")
	case strings.ContainsAny(a.TemplateID, "/@") && !strings.HasPrefix(a.TemplateID, ".") && !strings.Contains(a.TemplateID, ".."): // an image's reference, public (credentials go in image)
		req.TemplateID, req.Image = "", &sbx.ImageSpec{Ref: a.TemplateID}
		checkImage(&p, "templateID", *req.Image)
	default:
		name, tag, tagged := strings.Cut(a.TemplateID, ":")
		CheckTemplate(&p, "templateID", name)
		if tagged && !sbx.ValidTemplateName(tag) {
			p.Add("templateID", "the tag in templateID %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", a.TemplateID)
		}
	}
	if a.Timeout != nil {
		if *a.Timeout < 1 {
			p.Add("timeout", "timeout must be a positive number of seconds")
		} else if *a.Timeout <= math.MaxInt64/int64(time.Second) {
			req.Timeout = time.Duration(*a.Timeout) * time.Second
		} else {
			p.Add("timeout", "timeout is too large")
		}
	}
	if a.Kind != "" && !req.Kind.Valid() {
		p.Add("kind", "kind %q must be task, runtime or world", a.Kind)
	}
	CheckEnv(&p, "envVars", a.Env)
	CheckVolumes(&p, "volumes", a.Volumes)
	switch mode := sbx.PoolMode(a.WarmPool); mode {
	case "", sbx.PoolPrefer, sbx.PoolRequire, sbx.PoolBypass:
		req.PoolMode = mode
	default:
		p.Add("warmPool", "warmPool %q must be prefer, require or bypass", a.WarmPool)
	}
	CheckMetadata(&p, "metadata", a.Metadata)
	if a.SnapshotID == "" { // else the snapshot's (fromSnapshot)
		req.Resources = l.size(&p, a.CPU, a.MemoryMB, a.DiskMB)
	}
	if a.GPU != nil && a.SnapshotID == "" {
		gpu := checkGPU(&p, *a.GPU)
		req.Resources.GPU = &gpu
	}
	if a.Preview != nil {
		req.Preview = CheckPreview(&p, "preview", *a.Preview)
	}
	sbx.CheckPorts(&p, "ports", a.Ports)
	req.Ports = a.Ports
	if a.Egress != nil {
		e := sbx.CheckEgress(&p, "egress", *a.Egress)
		req.Egress = &e
	}
	return req, p.Err()
}

// StartResources is what a runtime's next sandbox is made with: its
// configuration's resources, the defaults where it names none.
func (m *Manager) StartResources(r sbx.Resources) sbx.Resources {
	l := m.cfg.Limits
	if r.MilliCPU == 0 {
		r.MilliCPU = int64(math.Round(l.DefaultCPU * 1000))
	}
	if r.MemoryMB == 0 {
		r.MemoryMB = l.DefaultMemoryMB
	}
	if r.DiskMB == 0 {
		r.DiskMB = l.DefaultDiskMB
	}
	return r
}

// RuntimeChange is a change of a runtime's configuration as a caller asks
// for it: the fields given replace the configuration's.
type RuntimeChange struct {
	TemplateID  *string
	CPU         *float64
	MemoryMB    *int64
	Timeout     *int64 // seconds
	Ports       *[]int
	Env, Labels *map[string]string
	Egress      *sbx.Egress
}

// CheckTemplate checks a template's name given in field.
func CheckTemplate(p *sbx.Problems, field, name string) {
	if !sbx.ValidTemplateName(name) {
		p.Add(field, "%s %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", field, name)
	}
}

// CheckEnv checks environment variables given in field (sbx.EnvFaults).
func CheckEnv(p *sbx.Problems, field string, env map[string]string) {
	for _, f := range sbx.EnvFaults(env) {
		if f.Name == "" {
			p.Add(field, "%s %s", field, f.Problem)
		} else {
			p.Add(field+"."+f.Name, "%s", f.Problem)
		}
	}
}

// CheckMetadata checks metadata (or a runtime's labels) given in field.
func CheckMetadata(p *sbx.Problems, field string, m map[string]string) {
	if len(m) > maxMetadata {
		p.Add(field, "%s may hold at most %d keys", field, maxMetadata)
	}
	for k, v := range m {
		switch {
		case k == "" || len(k) > maxMetaKeyBytes || strings.ContainsAny(k, "=\x00"):
			p.Add(field, "%s key %q must be 1-%d bytes without '='", field, k, maxMetaKeyBytes)
		case strings.HasPrefix(k, "sbx."):
			p.Add(field+"."+k, "%s key %q: the prefix sbx. is sbx's own (a runtime's sandboxes carry sbx.runtime_id)", field, k)
		case len(v) > maxMetaValBytes || strings.ContainsRune(v, 0):
			p.Add(field+"."+k, "%s value for %q must be at most %d bytes", field, k, maxMetaValBytes)
		}
	}
}

// MilliCPU checks a vCPU count given in field and answers it in thousandths.
func (l Limits) MilliCPU(p *sbx.Problems, field string, cpu float64) int64 {
	if !(cpu >= 0.001 && cpu <= l.MaxCPU) || math.IsNaN(cpu) {
		p.Add(field, "%s must be between 0.001 and %g vCPU", field, l.MaxCPU)
	}
	return int64(math.Round(cpu * 1000))
}

// Memory checks a memory size in MiB given in field.
func (l Limits) Memory(p *sbx.Problems, field string, mb int64) int64 {
	if mb < 64 || mb > l.MaxMemoryMB {
		p.Add(field, "%s must be between 64 and %d", field, l.MaxMemoryMB)
	}
	return mb
}

// Disk checks a writable layer's cap in MiB given in field.
func (l Limits) Disk(p *sbx.Problems, field string, mb int64) int64 {
	if mb < 1 || mb > l.MaxDiskMB {
		p.Add(field, "%s must be between 1 and %d (MiB of the sandbox's writable layer)", field, l.MaxDiskMB)
	}
	return mb
}

// checkGPU checks a GPU request and fills its count and fraction.
func checkGPU(p *sbx.Problems, g sbx.GPURequest) sbx.GPURequest {
	if g.Count == 0 {
		g.Count = 1
	}
	if g.Fraction == 0 {
		g.Fraction = 100
	}
	if !gpuTypePattern.MatchString(g.Type) {
		p.Add("gpu.type", "gpu.type is required, for example \"h100\"")
	}
	if g.Count < 1 || g.Count > maxGPUCount {
		p.Add("gpu.count", "gpu.count must be between 1 and %d", maxGPUCount)
	}
	switch g.Fraction {
	case 25, 50, 75:
		if g.Count != 1 {
			p.Add("gpu.fraction", "gpu.fraction below 100 needs gpu.count 1")
		}
	case 100:
	default:
		p.Add("gpu.fraction", "gpu.fraction must be 25, 50, 75 or 100")
	}
	return g
}

// size is a sandbox's size as a caller asks for it, each part checked
// under its field, the default where it names none.
func (l Limits) size(p *sbx.Problems, cpu *float64, memoryMB, diskMB *int64) sbx.Resources {
	return sbx.Resources{MilliCPU: l.MilliCPU(p, "cpu", valueOr(cpu, l.DefaultCPU)),
		MemoryMB: l.Memory(p, "memoryMB", valueOr(memoryMB, l.DefaultMemoryMB)), DiskMB: l.Disk(p, "diskMB", valueOr(diskMB, l.DefaultDiskMB))}
}

// Size is the size of sandboxes the operator asks for (a warm pool's
// members, a ready snapshot's): checked as a create's, the defaults where
// it names none.
func (m *Manager) Size(cpu *float64, memoryMB, diskMB *int64) (sbx.Resources, error) {
	var p sbx.Problems
	res := m.cfg.Limits.size(&p, cpu, memoryMB, diskMB)
	return res, p.Err()
}

func valueOr[T any](v *T, otherwise T) T {
	if v != nil {
		return *v
	}
	return otherwise
}

// checkImage checks an image asked for in field: a reference of sensible
// length, and a username only with a password.
func checkImage(p *sbx.Problems, field string, img sbx.ImageSpec) {
	switch {
	case img.Ref == "":
		p.Add(field+".uri", "uri is required: an image reference such as docker.io/library/python:3.12")
	case len(img.Ref) > maxImageRef:
		p.Add(field+".uri", "uri is %d bytes, more than %d", len(img.Ref), maxImageRef)
	}
	if (img.Username == "") != (img.Password == "") {
		p.Add(field+".password", "give a username and a password together, or neither for a public image")
	}
	if len(img.Username) > 256 || len(img.Password) > 4096 {
		p.Add(field+".password", "the registry credentials are too long (a username of at most 256 bytes, a password or token of at most 4096)")
	}
}

// maxImageRef is the longest image reference a create takes.
const maxImageRef = 512
