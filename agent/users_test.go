package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// Users come from the sandbox's /etc/passwd and /etc/group, read by the
// agent itself (no cgo): by name or UID, with a group or GID; a UID the
// file does not list, and any user of an image without /etc/passwd, are
// still users.
func TestLookupAccount(t *testing.T) {
	dir := t.TempDir()
	passwdFile, groupFile = filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	t.Cleanup(func() { passwdFile, groupFile = "/etc/passwd", "/etc/group" })

	own := uint32(os.Getuid())
	a := &Agent{}
	// No /etc/passwd at all: the agent's own user, and any UID.
	acct, err := a.lookupAccount("")
	if err != nil || acct.uid != own || acct.cred != nil {
		t.Fatalf("own user without /etc/passwd: %+v %v", acct, err)
	}
	if own == 0 && (acct.name != "root" || acct.home != "/root") {
		t.Errorf("root without /etc/passwd: %+v", acct)
	}
	if acct, err := a.lookupAccount("4242"); err != nil || acct.uid != 4242 || acct.gid != 0 || acct.home != "/" || acct.name != "4242" {
		t.Errorf("a UID without /etc/passwd: %+v %v", acct, err)
	}
	if _, err := a.lookupAccount("user"); err == nil {
		t.Error("a name without /etc/passwd was found")
	}

	os.WriteFile(passwdFile, []byte("root:x:0:0:root:/root:/bin/bash\n# a comment\nuser:x:1000:1000::/home/user:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"), 0o644)
	os.WriteFile(groupFile, []byte("root:x:0:\nusers:x:100:user,other\nuser:x:1000:\nnogroup:x:65534:\n"), 0o644)
	a.user = "user"
	acct, err = a.lookupAccount("")
	if err != nil || acct.name != "user" || acct.uid != 1000 || acct.gid != 1000 || acct.home != "/home/user" {
		t.Fatalf("the default user: %+v %v", acct, err)
	}
	if own != 1000 && (acct.cred == nil || acct.cred.Uid != 1000 || !slices.Equal(acct.cred.Groups, []uint32{1000, 100})) {
		t.Errorf("the default user's credential: %+v", acct.cred)
	}
	for name, want := range map[string][2]uint32{"root": {0, 0}, "0": {0, 0}, "nobody": {65534, 65534}, "1000": {1000, 1000},
		"user:users": {1000, 100}, "user:0": {1000, 0}, "65534:nogroup": {65534, 65534}, "77:78": {77, 78}} {
		acct, err := a.lookupAccount(name)
		if err != nil || acct.uid != want[0] || acct.gid != want[1] {
			t.Errorf("%s: %+v %v, want %v", name, acct, err, want)
		}
	}
	for _, bad := range []string{"ghost", "user:ghosts"} {
		if _, err := a.lookupAccount(bad); err == nil {
			t.Errorf("%s was found", bad)
		}
	}
	if acct, _ := a.lookupAccount(strconv.Itoa(int(own))); acct.cred != nil && uint32(os.Getgid()) == acct.gid {
		t.Errorf("the agent's own user gets a credential: %+v", acct.cred)
	}
}
