package gpu

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
)

// NvidiaSMI is the command Discover runs.
const NvidiaSMI = "nvidia-smi"

// queryArgs ask nvidia-smi for one CSV line per card: index, UUID, name and
// memory in MiB, without header or units.
var queryArgs = []string{"--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"}

// Discover returns the host's cards as nvidia-smi reports them. A host
// without nvidia-smi, or whose driver sees no card, has an empty inventory:
// that is no error. An nvidia-smi that fails is one, with what it said.
func Discover(ctx context.Context) (Inventory, error) {
	return DiscoverWith(ctx, NvidiaSMI)
}

// DiscoverWith is Discover running the nvidia-smi at path (a name is looked
// up in PATH).
func DiscoverWith(ctx context.Context, path string) (Inventory, error) {
	if _, err := exec.LookPath(path); errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return Inventory{}, nil
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, queryArgs...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		said := strings.TrimSpace(stderr.String() + "\n" + stdout.String())
		// The driver is loaded but has no card (nvidia-smi exits 6).
		if strings.Contains(said, "No devices were found") {
			return Inventory{}, nil
		}
		return nil, fmt.Errorf("%s: %v: %s", path, err, said)
	}
	inv, err := parseNvidiaSMI(stdout.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return inv, nil
}

// parseNvidiaSMI reads the output of nvidia-smi with queryArgs, e.g.
//
//	0, GPU-5a3f…, NVIDIA H100 80GB HBM3, 81559
func parseNvidiaSMI(out string) (Inventory, error) {
	r := csv.NewReader(strings.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = 4
	inv := Inventory{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return inv, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading its GPU list: %w", err)
		}
		index, err := strconv.Atoi(strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("GPU line %q: index %q is not a number", strings.Join(rec, ", "), rec[0])
		}
		memory, err := strconv.ParseInt(strings.TrimSpace(rec[3]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("GPU line %q: memory.total %q is not a number of MiB", strings.Join(rec, ", "), rec[3])
		}
		name := strings.TrimSpace(rec[2])
		inv = append(inv, Card{Index: index, UUID: strings.TrimSpace(rec[1]), Name: name, Type: normalizeType(name), MemoryMB: memory})
	}
}

// brandWords are the words of a card's name that say who made or sold it,
// not which model it is.
var brandWords = map[string]bool{"nvidia": true, "tesla": true, "geforce": true, "rtx": true, "quadro": true}

// normalizeType turns a card's name into the type sandboxes ask for: the
// first word of the lowercased name, split at spaces and hyphens, that is
// not a brand word ("NVIDIA A100-SXM4-40GB" is "a100", "Tesla T4" is "t4",
// "NVIDIA GeForce RTX 4090" is "4090"). A name of brand words only gives
// them all, joined by hyphens.
func normalizeType(name string) string {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == ' ' || r == '-' || r == '\t' })
	for _, w := range words {
		if !brandWords[w] {
			return w
		}
	}
	return strings.Join(words, "-")
}
