package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// Several sbx instances may share a host (serve processes with data dirs of
// their own, test runs, sbx bench), each under its own name: its nftables
// table, the prefix of its namespaces and, in the local provider, its
// cgroup parent. New claims the name and the pool for its instance, so
// that no two instances hand out the same addresses or take each other's
// sandboxes for orphans:
//
//   - the pool may not overlap the pool of another sbx table on the host,
//     read from that table's own masquerade rule (so tables of instances
//     that stopped, whose sandboxes may still run, and of sbx versions
//     before these records, count too);
//   - the name may not be one another instance, with other state, uses
//     while that instance's table exists; a table with no record (made by
//     an sbx from before the records) is another's when it holds sandboxes
//     that cfg.StateDir does not record.
//
// Each instance records its name, state directory and pool in
// <InstancesDir>/<name>.json; a record whose table is gone is stale and
// removed by the next instance to start. Claims are made one at a time
// under a lock on <InstancesDir>/.lock.

// InstancesDir holds a record of each sbx instance of the host. It is on a
// tmpfs, emptied at boot like the nftables tables it describes.
const InstancesDir = "/run/sbx"

// instance is what an instance records about itself.
type instance struct {
	Name     string       `json:"name"`
	StateDir string       `json:"state_dir"`
	Pool     netip.Prefix `json:"pool"`
	PID      int          `json:"pid"`
}

// CheckName reports why name cannot name an instance, if it cannot: it
// must be a valid nftables table name and must not contain '-', which
// separates it from the sandbox ID in namespace names.
func CheckName(name string) error {
	if !validTable.MatchString(name) {
		return fmt.Errorf("instance name %q: want 1 to 64 letters, digits and _ (it names the nftables table, network namespaces and the cgroup parent)", name)
	}
	return nil
}

// claim takes the instance lock, checks cfg's name and pool against the
// host's other instances and returns a function that records the instance
// and releases the lock, to call once its table is installed.
func claim(ctx context.Context, cfg Config) (done func(installed bool) error, err error) {
	if err := os.MkdirAll(InstancesDir, 0o755); err != nil {
		return nil, fmt.Errorf("network: instance records: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(InstancesDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("network: instance lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("network: instance lock: %w", err)
	}
	release := func() { lock.Close() } // closing releases the flock
	if err := checkClaim(ctx, cfg); err != nil {
		release()
		return nil, err
	}
	return func(installed bool) error {
		defer release()
		if !installed {
			return nil
		}
		return writeInstance(instance{Name: cfg.Table, StateDir: cfg.StateDir, Pool: cfg.Pool, PID: os.Getpid()})
	}, nil
}

// checkClaim refuses cfg's name when another instance's live table holds
// it with other state, and cfg's pool when it overlaps another table's.
func checkClaim(ctx context.Context, cfg Config) error {
	tables, err := sbxTables(ctx)
	if err != nil {
		return err
	}
	if _, live := tables[cfg.Table]; live {
		rec, err := readInstance(cfg.Table)
		switch {
		case err == nil && rec.StateDir != cfg.StateDir:
			return fmt.Errorf("network: instance name %q is in use by another sbx instance on this host, "+
				"whose network state is in %s (its nftables table inet %s exists): give this one another name (serve --name), "+
				"or stop that instance and delete its table (nft delete table inet %s)", cfg.Table, rec.StateDir, cfg.Table, cfg.Table)
		case errors.Is(err, os.ErrNotExist):
			// A table without a record: an sbx from before the records, on
			// this state or another. It is ours if it holds no sandbox that
			// our records do not name.
			if foreign, err := foreignSandboxes(ctx, cfg); err != nil {
				return err
			} else if len(foreign) > 0 {
				return fmt.Errorf("network: instance name %q is in use by another sbx instance on this host: its nftables table inet %s "+
					"holds sandbox interfaces that %s does not record (%s): give this one another name (serve --name), "+
					"or stop that instance and delete its table (nft delete table inet %s)", cfg.Table, cfg.Table, cfg.StateDir, strings.Join(foreign, ", "), cfg.Table)
			}
		}
	}
	for name, pool := range tables {
		if name == cfg.Table || !pool.Overlaps(cfg.Pool) {
			continue
		}
		other := ""
		if rec, err := readInstance(name); err == nil {
			other = ", network state in " + rec.StateDir
		}
		return fmt.Errorf("network: pool %s overlaps pool %s of sbx instance %q (nftables table inet %s%s): "+
			"give this instance a pool of its own (serve --pool), or delete that table if its instance is gone (nft delete table inet %s)",
			cfg.Pool, pool, name, name, other, name)
	}
	// Records whose table is gone describe instances that are gone.
	files, _ := filepath.Glob(filepath.Join(InstancesDir, "*.json"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); name != cfg.Table {
			if _, live := tables[name]; !live {
				os.Remove(f)
			}
		}
	}
	return nil
}

// masquerade is the rule by which an sbx table names its pool.
var masquerade = regexp.MustCompile(`^\s*ip saddr (\S+) oifname != @sandboxes masquerade`)

// sbxTables returns the pool of every sbx table on the host (family inet,
// with the masquerade rule of rulesetTemplate), by table name.
func sbxTables(ctx context.Context) (map[string]netip.Prefix, error) {
	cmd := exec.CommandContext(ctx, "nft", "list", "ruleset", "inet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, errors.New("network: nft not found: install nftables")
		}
		return nil, fmt.Errorf("network: listing nftables tables: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	tables := map[string]netip.Prefix{}
	table := ""
	lines := bufio.NewScanner(&stdout)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if name, ok := strings.CutPrefix(line, "table inet "); ok {
			table = strings.TrimSuffix(strings.TrimSpace(name), " {")
			continue
		}
		if m := masquerade.FindStringSubmatch(line); m != nil && table != "" {
			if pool, err := netip.ParsePrefix(m[1]); err == nil {
				tables[table] = pool
			}
		}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("network: listing nftables tables: %w", err)
	}
	return tables, nil
}

// foreignSandboxes lists the interfaces in the sandboxes set of cfg's
// table that no attachment recorded in cfg.StateDir has.
func foreignSandboxes(ctx context.Context, cfg Config) ([]string, error) {
	out, err := exec.CommandContext(ctx, "nft", "-j", "list", "set", "inet", cfg.Table, "sandboxes").Output()
	if err != nil {
		return nil, nil // no such set: not a table with sandboxes
	}
	var listing struct {
		Nftables []struct {
			Set *struct {
				Elem []any `json:"elem"`
			} `json:"set"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &listing); err != nil {
		return nil, fmt.Errorf("network: nftables set %s sandboxes: %w", cfg.Table, err)
	}
	ours := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(cfg.StateDir, "*.json"))
	for _, f := range files {
		if a, err := readRecord(f); err == nil {
			ours[a.HostIf] = true
		}
	}
	var foreign []string
	for _, item := range listing.Nftables {
		if item.Set == nil {
			continue
		}
		for _, e := range item.Set.Elem {
			if name, ok := e.(string); ok && !ours[name] {
				foreign = append(foreign, name)
			}
		}
	}
	return foreign, nil
}

func instanceFile(name string) string { return filepath.Join(InstancesDir, name+".json") }

func readInstance(name string) (instance, error) {
	var rec instance
	data, err := os.ReadFile(instanceFile(name))
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	return rec, err
}

func writeInstance(rec instance) error {
	data, err := json.MarshalIndent(rec, "", "\t")
	if err != nil {
		return err
	}
	file := instanceFile(rec.Name)
	if err := os.WriteFile(file+".tmp", append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("network: instance record: %w", err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return fmt.Errorf("network: instance record: %w", err)
	}
	return nil
}
