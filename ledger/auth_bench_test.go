package ledger_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

// BenchmarkAuthenticate measures what every API request pays to know its
// caller, for an org-wide key and a member's, on SQLite.
//
//	go test ./ledger -run '^$' -bench Authenticate
func BenchmarkAuthenticate(b *testing.B) {
	s, err := ledger.Open(context.Background(), filepath.Join(b.TempDir(), "l.db"), key)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Key: sbx.APIKey{Name: "owner"}}, t0)
	if err != nil {
		b.Fatal(err)
	}
	m, _, err := s.AddMember(ctx, made.Org.ID, made.Workspace.ID, "ada@example.com", "Ada", sbx.RoleAdmin, t0)
	if err != nil {
		b.Fatal(err)
	}
	_, member, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: made.Org.ID, Name: "ada", UserID: m.User.ID}, t0)
	if err != nil {
		b.Fatal(err)
	}
	for name, secret := range map[string]string{"org": made.Secret, "member": member} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Authenticate(ctx, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
