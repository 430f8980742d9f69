package httpapi

import (
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
)

// parseCreate decodes a create body into what the caller asks, which
// lifecycle checks and completes (every problem reported under its field),
// and the project it names ("": the key's).
func (s *Server) parseCreate(data []byte) (lifecycle.CreateRequest, string, error) {
	var body apiv1.CreateSandboxRequest
	if err := decodeStrict(data, &body); err != nil {
		return lifecycle.CreateRequest{}, "", err
	}
	ask := lifecycle.Ask{TemplateID: body.TemplateID, Image: imageOf(body.Image), SnapshotID: body.SnapshotID, WarmPool: body.WarmPool, Kind: body.Kind, Timeout: body.Timeout, CPU: body.CPU,
		MemoryMB: body.MemoryMB, DiskMB: body.DiskMB, Env: body.EnvVars, Metadata: body.Metadata,
		WaitReady: body.WaitReady, AutoPause: body.AutoPause, Ports: body.Ports, Egress: egressOf(body.Egress), Provider: body.Provider}
	if v := body.Preview; v != nil {
		ask.Preview = &lifecycle.PreviewAsk{Access: v.Access, Host: v.Host, Wake: v.Wake}
	}
	for _, v := range body.Volumes {
		ask.Volumes = append(ask.Volumes, lifecycle.VolumeAsk{Name: v.Name, Path: v.Path, ReadOnly: v.ReadOnly})
	}
	if g := body.GPU; g != nil {
		ask.GPU = &sbx.GPURequest{Type: g.Type, Count: g.Count, Fraction: g.Fraction}
	}
	req, err := s.mgr.Request(ask)
	return req, body.ProjectID, err
}

func imageOf(i *apiv1.Image) *sbx.ImageSpec {
	if i == nil {
		return nil
	}
	return &sbx.ImageSpec{Ref: i.URI, Username: i.Username, Password: i.Password}
}
