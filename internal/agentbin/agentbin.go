// Package agentbin carries the agent-only build of sbx (cmd/sbx-agent),
// gzipped, inside the sbx binary, so that sbx stays one file while its
// sandboxes run an agent a quarter of its size (docs/BENCHMARKS.md, idle
// density).
//
// The sbx-agent.gz committed here is empty: scripts/lib.sh's build_sbx (and
// testenv.BuildSbx, for the tests) builds cmd/sbx-agent and hands its
// gzipped binary to the build of cmd/sbx in this file's place, with `go
// build -overlay`, so the tree is never written. A plain `go build` carries
// none, and its sandboxes run sbx itself as their agent.
package agentbin

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
)

//go:embed sbx-agent.gz
var gz []byte

// File is the file name a build replaces with the gzipped agent.
const File = "sbx-agent.gz"

// Open is the agent-only build this binary carries, decompressed as it is
// read; ok is false for a build that carries none.
func Open() (r io.Reader, ok bool, err error) {
	if len(gz) == 0 {
		return nil, false, nil
	}
	z, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, false, err
	}
	return z, true, nil
}
