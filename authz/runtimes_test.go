package authz_test

import (
	"errors"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// A project's key reaches its project's runtime only, and another runtime
// is not found rather than forbidden; every other key reaches each.
func TestReachRuntime(t *testing.T) {
	rt := sbx.Runtime{ID: "r1", ProjectID: "p1"}
	for _, c := range []struct {
		who    string
		caller sbx.Caller
		reach  bool
	}{
		{"an org-wide key", sbx.Caller{Key: sbx.APIKey{ID: "k"}, Role: sbx.RoleOwner}, true},
		{"a member's key", sbx.Caller{Key: sbx.APIKey{ID: "k", UserID: "u"}, User: sbx.User{ID: "u"}, Role: sbx.RoleMember}, true},
		{"its project's key", sbx.Caller{Key: sbx.APIKey{ID: "k", ProjectID: "p1"}, Role: sbx.RoleMember}, true},
		{"another project's key", sbx.Caller{Key: sbx.APIKey{ID: "k", ProjectID: "p2"}, Role: sbx.RoleMember}, false},
	} {
		err := authz.ReachRuntime(c.caller, rt)
		if c.reach {
			if err != nil {
				t.Errorf("%s: %v", c.who, err)
			}
			continue
		}
		var e *sbx.Error
		if !errors.As(err, &e) || e.Code != sbx.ENotFound || e.Message != "runtime r1 not found in this workspace" {
			t.Errorf("%s: %v, want runtime r1 not found in this workspace", c.who, err)
		}
	}
}
