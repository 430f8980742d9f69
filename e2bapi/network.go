package e2bapi

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/sbxdev/sbx"
)

// network is E2B's network configuration of a create, and of an update
// (which adds allow_internet_access).
type network struct {
	AllowOut            []string        `json:"allowOut"`
	DenyOut             []string        `json:"denyOut"`
	AllowPublicTraffic  *bool           `json:"allowPublicTraffic"`
	AllowInternetAccess *bool           `json:"allow_internet_access"`
	EgressProxy         json.RawMessage `json:"egressProxy"`
	Rules               json.RawMessage `json:"rules"`
	MaskRequestHost     json.RawMessage `json:"maskRequestHost"`
	HTTPSPorts          json.RawMessage `json:"httpsPorts"`
}

// allTraffic is E2B's name of every address, which a denyOut lists to
// make allowOut an allow list.
const allTraffic = "0.0.0.0/0"

// egressOf maps E2B's internet access and network onto an sbx egress policy
// (nil: the template's or the server's default) and whether previews are
// public (nil: unsaid).
func egressOf(p *sbx.Problems, internet *bool, n *network) (e *sbx.Egress, public *bool) {
	if n == nil {
		n = &network{}
	}
	refuse(p, "network.egressProxy", n.EgressProxy, "sbx sandboxes reach the network directly, or not at all")
	refuse(p, "network.rules", n.Rules, "sbx rewrites no requests on their way out")
	refuse(p, "network.maskRequestHost", n.MaskRequestHost, "sbx previews keep or mask the host by their own policy (preview.host)")
	if len(n.HTTPSPorts) > 0 && string(n.HTTPSPorts) != "null" && string(n.HTTPSPorts) != "[]" {
		p.Add("network.httpsPorts", "network.httpsPorts is not supported: sbx previews speak the scheme serve listens with")
	}
	switch denyAll := slices.Contains(n.DenyOut, allTraffic); {
	case internet != nil && !*internet && len(n.AllowOut) == 0, denyAll && len(n.AllowOut) == 0:
		e = &sbx.Egress{Mode: sbx.EgressNone}
	case denyAll || (internet != nil && !*internet):
		e = &sbx.Egress{Mode: sbx.EgressAllow, Allow: n.AllowOut}
		for _, d := range n.DenyOut {
			if d != allTraffic {
				e.Deny = append(e.Deny, d)
			}
		}
	case len(n.DenyOut) > 0:
		e = &sbx.Egress{Mode: sbx.EgressInternet, Deny: n.DenyOut}
	case internet != nil: // allowed, with nothing denied: allowOut adds nothing to the internet
		e = &sbx.Egress{Mode: sbx.EgressInternet}
	}
	return e, n.AllowPublicTraffic
}

// networkOut is E2B's network configuration of a sandbox's detail.
type networkOut struct {
	AllowOut           []string `json:"allowOut,omitempty"`
	DenyOut            []string `json:"denyOut,omitempty"`
	AllowPublicTraffic bool     `json:"allowPublicTraffic"`
}

func renderNetwork(sb sbx.Sandbox) networkOut {
	out := networkOut{AllowPublicTraffic: sb.Preview.Public}
	if e := sb.Egress; e != nil {
		switch e.Mode {
		case sbx.EgressNone:
			out.DenyOut = []string{allTraffic}
		case sbx.EgressAllow:
			out.AllowOut, out.DenyOut = e.Allow, append([]string{allTraffic}, e.Deny...)
		default:
			out.DenyOut = e.Deny
		}
	}
	return out
}

// updateNetwork replaces a running sandbox's egress policy.
func (s *Server) network(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body network
	if err := decode(r, &body); err != nil {
		return err
	}
	var p sbx.Problems
	if body.AllowPublicTraffic != nil {
		p.Add("allowPublicTraffic", "allowPublicTraffic is set at create: sbx changes no preview policy of a running sandbox")
	}
	e, _ := egressOf(&p, body.AllowInternetAccess, &body)
	if err := p.Err(); err != nil {
		return err
	}
	if e == nil {
		e = &sbx.Egress{Mode: sbx.EgressInternet}
	}
	if _, err := s.live(r, c); err != nil {
		return err
	}
	if _, err := s.mgr.SetEgress(r.Context(), c, r.PathValue("id"), *e); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
