package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Each attachment is recorded as <StateDir>/<id>.json, so that a restarted
// process knows the sandboxes, their addresses and their policies.

// loadRecords reads the attachments recorded in dir, creating dir if needed,
// and checks that their addresses are distinct /30s of pool.
func loadRecords(dir string, pool netip.Prefix) (map[string]Attachment, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("network: state directory: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("network: state directory: %w", err)
	}
	attached := make(map[string]Attachment, len(files))
	owner := make(map[netip.Addr]string, len(files))
	for _, file := range files {
		a, err := readRecord(file)
		if err == nil {
			err = checkBlock(a, pool)
		}
		if err == nil && owner[a.Gateway] != "" {
			err = fmt.Errorf("address %s is also recorded for sandbox %s", a.Addr, owner[a.Gateway])
		}
		if err != nil {
			return nil, fmt.Errorf("network: record %s: %w", file, err)
		}
		attached[a.ID] = a
		owner[a.Gateway] = a.ID
	}
	return attached, nil
}

func readRecord(file string) (Attachment, error) {
	var a Attachment
	data, err := os.ReadFile(file)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, err
	}
	if want := strings.TrimSuffix(filepath.Base(file), ".json"); a.ID != want {
		return a, fmt.Errorf("records sandbox %q, want %q", a.ID, want)
	}
	return a, nil
}

// saveRecord records a, replacing its previous record atomically.
func saveRecord(dir string, a Attachment) error {
	data, err := json.MarshalIndent(a, "", "\t")
	if err != nil {
		return err
	}
	file := filepath.Join(dir, a.ID+".json")
	if err := os.WriteFile(file+".tmp", append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

func removeRecord(dir, id string) error {
	err := os.Remove(filepath.Join(dir, id+".json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
