package sbx

import "testing"

func TestRole(t *testing.T) {
	roles := []Role{RoleOwner, RoleAdmin, RoleMember} // strongest first
	for _, r := range roles {
		if !r.Valid() {
			t.Errorf("%q is not valid", r)
		}
	}
	for _, r := range []Role{"", "Owner", "root", "viewer"} {
		if r.Valid() {
			t.Errorf("%q is valid", r)
		}
	}
	for i, r := range roles {
		for j, min := range roles {
			if got, want := r.AtLeast(min), i <= j; got != want {
				t.Errorf("%s.AtLeast(%s) = %v, want %v", r, min, got, want)
			}
		}
	}
	// An unknown role is at least nothing: a role the ledger does not know
	// grants nothing. An unknown minimum asks for nothing beyond a real role.
	for _, r := range []Role{"", "root"} {
		for _, min := range append(roles, "", "root") {
			if r.AtLeast(min) {
				t.Errorf("the unknown role %q is at least %q", r, min)
			}
		}
	}
	for _, r := range roles {
		if !r.AtLeast("") || !r.AtLeast("root") {
			t.Errorf("%s is not at least an unknown role", r)
		}
	}
}

func TestKYCStatus(t *testing.T) {
	for _, s := range []KYCStatus{KYCUnverified, KYCPending, KYCVerified} {
		if !s.Valid() {
			t.Errorf("%q is not valid", s)
		}
	}
	for _, s := range []KYCStatus{"", "Verified", "rejected"} {
		if s.Valid() {
			t.Errorf("%q is valid", s)
		}
	}
}

func TestRuntimeStatus(t *testing.T) {
	for state, want := range map[State]string{
		"":            RuntimeIdle, // no current sandbox
		StateStarting: RuntimeRunning,
		StateRunning:  RuntimeRunning,
		StatePaused:   RuntimePaused,
		StateKilled:   RuntimeIdle,
		StateFailed:   RuntimeIdle,
	} {
		if got := RuntimeStatus(state); got != want {
			t.Errorf("RuntimeStatus(%q) = %q, want %q", state, got, want)
		}
	}
}

func TestAPIKeyScope(t *testing.T) {
	for _, c := range []struct {
		key  APIKey
		want string
	}{
		{APIKey{}, "org"},
		{APIKey{ProjectID: "p"}, "project"},
		{APIKey{UserID: "u"}, "member"},
		{APIKey{UserID: "u", ProjectID: "p"}, "member"},
	} {
		if got := c.key.Scope(); got != c.want {
			t.Errorf("%+v.Scope() = %q, want %q", c.key, got, c.want)
		}
	}
}

// The three kinds of key, and the user behind a member's key, decide what a
// caller reaches of its org.
func TestCallerReach(t *testing.T) {
	for _, c := range []struct {
		name                  string
		caller                Caller
		orgWide, memberScoped bool
		reach                 Reach
	}{
		{"org key", Caller{Role: RoleOwner}, true, false, Reach{}},
		{"project key", Caller{Key: APIKey{ProjectID: "p1"}, Role: RoleMember}, false, false, Reach{ProjectID: "p1"}},
		{"owner's key", Caller{Key: APIKey{UserID: "u1"}, User: User{ID: "u1"}, Role: RoleOwner}, true, false, Reach{}},
		{"admin's key", Caller{Key: APIKey{UserID: "u1"}, User: User{ID: "u1"}, Role: RoleAdmin}, true, true, Reach{UserID: "u1"}},
		{"member's key", Caller{Key: APIKey{UserID: "u1"}, User: User{ID: "u1"}, Role: RoleMember}, true, true, Reach{UserID: "u1"}},
		{"member's project key", Caller{Key: APIKey{UserID: "u1", ProjectID: "p1"}, User: User{ID: "u1"}, Role: RoleMember}, false, true, Reach{UserID: "u1", ProjectID: "p1"}},
	} {
		if got := c.caller.OrgWide(); got != c.orgWide {
			t.Errorf("%s: OrgWide = %v, want %v", c.name, got, c.orgWide)
		}
		if got := c.caller.MemberScoped(); got != c.memberScoped {
			t.Errorf("%s: MemberScoped = %v, want %v", c.name, got, c.memberScoped)
		}
		if got := c.caller.Reach(); got != c.reach {
			t.Errorf("%s: Reach = %+v, want %+v", c.name, got, c.reach)
		}
	}
}

func TestCallerVerified(t *testing.T) {
	for _, c := range []struct {
		name   string
		caller Caller
		want   bool
	}{
		{"verified org", Caller{Org: Org{KYCStatus: KYCVerified}}, true},
		{"pending org", Caller{Org: Org{KYCStatus: KYCPending}}, false},
		{"unverified org", Caller{Org: Org{KYCStatus: KYCUnverified}}, false},
		{"verified member of an unverified org", Caller{Org: Org{KYCStatus: KYCUnverified}, User: User{ID: "u1", KYCStatus: KYCVerified}}, true},
		{"pending member of an unverified org", Caller{Org: Org{KYCStatus: KYCUnverified}, User: User{ID: "u1", KYCStatus: KYCPending}}, false},
		{"unverified member of a verified org", Caller{Org: Org{KYCStatus: KYCVerified}, User: User{ID: "u1", KYCStatus: KYCUnverified}}, true},
		// A status with no user behind it is nobody's verification.
		{"no user, a verified status", Caller{User: User{KYCStatus: KYCVerified}}, false},
	} {
		if got := c.caller.Verified(); got != c.want {
			t.Errorf("%s: Verified = %v, want %v", c.name, got, c.want)
		}
	}
}
