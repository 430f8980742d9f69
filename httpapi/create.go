package httpapi

import (
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
)

var (
	templatePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	gpuTypePattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// Bounds on what a create body may hold.
const (
	maxMetadata     = 64
	maxMetaKeyBytes = 128
	maxMetaValBytes = 1024
	maxGPUCount     = 8
)

// parseCreate decodes and validates a create body. Every problem found is
// reported, each under the field it concerns.
func (cfg Config) parseCreate(data []byte) (lifecycle.CreateRequest, error) {
	var body apiv1.CreateSandboxRequest
	if err := decodeStrict(data, &body); err != nil {
		return lifecycle.CreateRequest{}, err
	}
	var p problems
	req := lifecycle.CreateRequest{
		TemplateID: body.TemplateID, Kind: sbx.Kind(body.Kind), WaitReady: body.WaitReady,
		AutoPause: body.AutoPause, Env: body.EnvVars, Metadata: body.Metadata,
	}
	switch {
	case body.TemplateID == "":
		p.Add("templateID", "templateID is required, for example \"base\"")
	case !templatePattern.MatchString(body.TemplateID):
		p.Add("templateID", "templateID %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", body.TemplateID)
	}
	if body.Timeout != nil {
		if *body.Timeout < 1 {
			p.Add("timeout", "timeout must be a positive number of seconds")
		} else if *body.Timeout <= math.MaxInt64/int64(time.Second) {
			req.Timeout = time.Duration(*body.Timeout) * time.Second
		} else {
			p.Add("timeout", "timeout is too large")
		}
	}
	if body.Kind != "" && !req.Kind.Valid() {
		p.Add("kind", "kind %q must be task, runtime or world", body.Kind)
	}
	p.env("envVars", body.EnvVars)
	p.metadata("metadata", body.Metadata)
	cpu := cfg.DefaultCPU
	if body.CPU != nil {
		cpu = *body.CPU
	}
	req.Resources.MilliCPU = cfg.milliCPU(&p, "cpu", cpu)
	req.Resources.MemoryMB = cfg.DefaultMemory
	if body.MemoryMB != nil {
		req.Resources.MemoryMB = *body.MemoryMB
	}
	cfg.memory(&p, "memoryMB", req.Resources.MemoryMB)
	req.Resources.DiskMB = cfg.DefaultDiskMB
	if body.DiskMB != nil {
		req.Resources.DiskMB = *body.DiskMB
	}
	cfg.disk(&p, "diskMB", req.Resources.DiskMB)
	if g := body.GPU; g != nil {
		gpu := sbx.GPURequest{Type: g.Type, Count: g.Count, Fraction: g.Fraction}
		if gpu.Count == 0 {
			gpu.Count = 1
		}
		if gpu.Fraction == 0 {
			gpu.Fraction = 100
		}
		if !gpuTypePattern.MatchString(g.Type) {
			p.Add("gpu.type", "gpu.type is required, for example \"h100\"")
		}
		if gpu.Count < 1 || gpu.Count > maxGPUCount {
			p.Add("gpu.count", "gpu.count must be between 1 and %d", maxGPUCount)
		}
		switch gpu.Fraction {
		case 25, 50, 75:
			if gpu.Count != 1 {
				p.Add("gpu.fraction", "gpu.fraction below 100 needs gpu.count 1")
			}
		case 100:
		default:
			p.Add("gpu.fraction", "gpu.fraction must be 25, 50, 75 or 100")
		}
		req.Resources.GPU = &gpu
	}
	return req, p.Err()
}

// problems collects field errors, with the checks the API's bodies share.
type problems struct{ sbx.Problems }

// env checks environment variables given in field.
func (p *problems) env(field string, env map[string]string) {
	for _, f := range sbx.EnvFaults(env) {
		if f.Name == "" {
			p.Add(field, "%s %s", field, f.Problem)
		} else {
			p.Add(field+"."+f.Name, "%s", f.Problem)
		}
	}
}

// metadata checks metadata given in field.
func (p *problems) metadata(field string, m map[string]string) {
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

// milliCPU checks a vCPU count given in field and answers it in thousandths.
func (cfg Config) milliCPU(p *problems, field string, cpu float64) int64 {
	if !(cpu >= 0.001 && cpu <= cfg.MaxCPU) || math.IsNaN(cpu) {
		p.Add(field, "%s must be between 0.001 and %g vCPU", field, cfg.MaxCPU)
	}
	return int64(math.Round(cpu * 1000))
}

// disk checks a writable layer's cap in MiB given in field.
func (cfg Config) disk(p *problems, field string, mb int64) {
	if mb < 1 || mb > cfg.MaxDiskMB {
		p.Add(field, "%s must be between 1 and %d (MiB of the sandbox's writable layer)", field, cfg.MaxDiskMB)
	}
}

// memory checks a memory size in MiB given in field.
func (cfg Config) memory(p *problems, field string, mb int64) {
	if mb < 64 || mb > cfg.MaxMemoryMB {
		p.Add(field, "%s must be between 64 and %d", field, cfg.MaxMemoryMB)
	}
}
