package agent

import (
	"bufio"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Users are read from the sandbox's /etc/passwd and /etc/group by the agent
// itself: the binary is built without cgo, and os/user's fallback cannot
// name the current user of an image without /etc/passwd.

// Where the user database is; tests point them elsewhere.
var (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
)

// account is the user a command runs as, and new files belong to.
type account struct {
	name, home string
	uid, gid   uint32
	cred       *syscall.Credential // nil: the agent's own user
}

// passwdEntry is one line of /etc/passwd.
type passwdEntry struct {
	name     string
	uid, gid uint32
	home     string
}

// lookupAccount finds the user a request names: "" is the agent's default
// user (Config.User, else the agent's own: root in a sandbox); otherwise a
// name or UID, optionally with ":GROUP" (a name or GID), as an OCI image's
// User is written. A UID that /etc/passwd does not list runs with that UID
// and GID 0, home /, as container runtimes do; an image without
// /etc/passwd is no error.
func (a *Agent) lookupAccount(name string) (*account, error) {
	if name == "" {
		name = a.user
	}
	acct, err := resolveAccount(name)
	if err != nil {
		return nil, err
	}
	if int(acct.uid) != os.Getuid() || int(acct.gid) != os.Getgid() {
		acct.cred = &syscall.Credential{Uid: acct.uid, Gid: acct.gid, Groups: groupsOf(acct.name, acct.gid)}
	}
	return acct, nil
}

// userParam is the account a file request's ?user names, the default user
// when it names none; given empty (?user=) it is a 400, as every other
// query parameter given empty.
func (a *Agent) userParam(r *http.Request) (*account, error) {
	name, _, err := queryParam(r, "user")
	if err != nil {
		return nil, err
	}
	return a.lookupAccount(name)
}

// resolveAccount reads name ("" is the agent's own user) from the user
// database.
func resolveAccount(name string) (*account, error) {
	users, err := readPasswd()
	if err != nil {
		return nil, invalid("user %s: %s", quote(name), short(err.Error()))
	}
	userPart, groupPart, withGroup := strings.Cut(name, ":")
	var acct *account
	if userPart == "" {
		acct = byUID(users, uint32(os.Getuid()))
	} else if uid, numErr := parseID(userPart); numErr == nil {
		acct = byUID(users, uid)
	} else {
		for _, u := range users {
			if u.name == userPart {
				acct = &account{name: u.name, uid: u.uid, gid: u.gid, home: u.home}
				break
			}
		}
		if acct == nil {
			return nil, invalid("user %s is not in the sandbox's %s", quote(userPart), passwdFile)
		}
	}
	if withGroup {
		gid, err := lookupGroup(groupPart)
		if err != nil {
			return nil, err
		}
		acct.gid = gid
	}
	return acct, nil
}

// byUID is the user with uid, or a nameless one: named by its number, GID 0
// (root's home for UID 0).
func byUID(users []passwdEntry, uid uint32) *account {
	for _, u := range users {
		if u.uid == uid {
			return &account{name: u.name, uid: u.uid, gid: u.gid, home: u.home}
		}
	}
	acct := &account{name: strconv.FormatUint(uint64(uid), 10), uid: uid, home: "/"}
	if uid == 0 {
		acct.name, acct.home = "root", "/root"
	}
	return acct
}

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}

// readPasswd reads /etc/passwd; a missing one is empty.
func readPasswd() ([]passwdEntry, error) {
	var users []passwdEntry
	err := eachLine(passwdFile, func(f []string) {
		if len(f) < 6 {
			return
		}
		uid, err1 := parseID(f[2])
		gid, err2 := parseID(f[3])
		if err1 == nil && err2 == nil {
			users = append(users, passwdEntry{name: f[0], uid: uid, gid: gid, home: f[5]})
		}
	})
	return users, err
}

// lookupGroup finds a group by name or GID; a GID need not be listed.
func lookupGroup(name string) (uint32, error) {
	if gid, err := parseID(name); err == nil {
		return gid, nil
	}
	var gid uint32
	found := false
	err := eachLine(groupFile, func(f []string) {
		if len(f) >= 3 && f[0] == name && !found {
			if n, err := parseID(f[2]); err == nil {
				gid, found = n, true
			}
		}
	})
	if err != nil {
		return 0, invalid("group %s: %s", quote(name), short(err.Error()))
	}
	if !found {
		return 0, invalid("group %s is not in the sandbox's %s", quote(name), groupFile)
	}
	return gid, nil
}

// groupsOf is a user's groups: its primary group and every group of
// /etc/group that lists it.
func groupsOf(user string, primary uint32) []uint32 {
	groups := []uint32{primary}
	eachLine(groupFile, func(f []string) {
		if len(f) < 4 {
			return
		}
		gid, err := parseID(f[2])
		if err != nil || gid == primary {
			return
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == user {
				groups = append(groups, gid)
				return
			}
		}
	})
	return groups
}

// eachLine calls fn with the colon-separated fields of each line of a
// user database file that is not a comment; a missing file has none.
func eachLine(path string, fn func([]string)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fn(strings.Split(line, ":"))
	}
	return sc.Err()
}

// ownWorkdir gives an empty working directory of root's to the default
// user: a volume mounted there (a Kubernetes sandbox's, which keeps the
// directory across a pause) starts empty and root's, where the template's
// own directory was the user's. A directory holding anything is left as
// it is (a new filesystem's lost+found aside).
func (a *Agent) ownWorkdir() {
	acct, err := a.lookupAccount("")
	if err != nil || acct.cred == nil || acct.uid == 0 {
		return
	}
	var st syscall.Stat_t
	if syscall.Stat(a.workdir, &st) != nil || st.Uid != 0 {
		return
	}
	entries, err := os.ReadDir(a.workdir)
	if err != nil || len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "lost+found" { // a new ext4 volume's
		return
	}
	if err := os.Chown(a.workdir, int(acct.uid), int(acct.gid)); err != nil {
		a.log.Warn("the working directory stays root's", "workdir", a.workdir, "err", err)
	}
}
