package capability_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
)

// entry is one entry of a test archive.
type entry struct {
	name, body, link string
	typ              byte // default: a regular file
	mode             int64
}

// tarball packs entries as a tar.gz, whatever they are.
func tarball(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// demoFiles is a good bundle of goodManifest's.
func demoFiles() []entry {
	return []entry{
		{name: "capability.yaml", body: goodManifest},
		{name: "tools/hello", body: "#!/bin/sh\necho hello \"$@\"\n", mode: 0o755},
		{name: "tools/extra", body: "#!/bin/sh\necho extra\n"},
		{name: "skills/demo/SKILL.md", body: "---\nname: demo-skill\n---\n# Demo\n"},
		{name: "prompts/reviewer.md", body: "You review.\n"},
		{name: "server.sh", body: "#!/bin/sh\ncat\n"},
	}
}

func TestLoadArchive(t *testing.T) {
	b, err := capability.LoadArchive(tarball(t, demoFiles()...))
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Name != "demo" || len(b.Files) != 6 || b.Files["tools/hello"].Mode != 0o755 || b.Files["tools/extra"].Mode != 0o644 ||
		string(b.Files["prompts/reviewer.md"].Data) != "You review.\n" {
		t.Fatalf("bundle %+v", b)
	}
	// One top-level directory, "./" prefixes and directory entries are fine.
	var nested []entry
	for _, e := range append([]entry{{name: "./demo/", typ: tar.TypeDir}}, demoFiles()...) {
		if e.typ == 0 {
			e.name = "./demo/" + e.name
		}
		nested = append(nested, e)
	}
	nb, err := capability.LoadArchive(tarball(t, nested...))
	if err != nil || len(nb.Files) != 6 || nb.Files["capability.yaml"].Data == nil {
		t.Fatalf("nested: %v %+v", err, nb)
	}
	// Archive and load again: the same files.
	data, err := b.Archive()
	if err != nil {
		t.Fatal(err)
	}
	again, err := capability.LoadArchive(data)
	if err != nil || len(again.Files) != len(b.Files) || again.Files["tools/hello"].Mode != 0o755 {
		t.Fatalf("round trip: %v %+v", err, again)
	}
	for p, f := range b.Files {
		if !bytes.Equal(again.Files[p].Data, f.Data) {
			t.Errorf("%s changed in the round trip", p)
		}
	}
	if data2, _ := again.Archive(); !bytes.Equal(data, data2) {
		t.Error("packing the same bundle twice gave different archives")
	}
}

// Unsafe or malformed archives are refused, each with a message naming the
// entry and the reason.
func TestUnsafeArchives(t *testing.T) {
	with := func(extra ...entry) []entry { return append(demoFiles(), extra...) }
	for _, c := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"absolute path", with(entry{name: "/etc/passwd", body: "x"}), `archive entry "/etc/passwd" has an absolute path`},
		{"dot dot", with(entry{name: "tools/../../escape", body: "x"}), `archive entry "tools/../../escape" must stay inside the bundle`},
		{"dot dot first", with(entry{name: "../escape", body: "x"}), `archive entry "../escape" must stay inside the bundle`},
		{"symlink out", with(entry{name: "tools/sh", typ: tar.TypeSymlink, link: "/bin/sh"}), `archive entry "tools/sh" is a link (to "/bin/sh")`},
		{"symlink in", with(entry{name: "tools/again", typ: tar.TypeSymlink, link: "hello"}), `is a link (to "hello"): a bundle holds only regular files and directories`},
		{"hard link", with(entry{name: "tools/hard", typ: tar.TypeLink, link: "../../etc/shadow"}), `archive entry "tools/hard" is a link`},
		{"device", with(entry{name: "dev/null", typ: tar.TypeChar}), `archive entry "dev/null" is a device or a FIFO`},
		{"fifo", with(entry{name: "pipe", typ: tar.TypeFifo}), `archive entry "pipe" is a device or a FIFO`},
		{"twice", with(entry{name: "tools/hello", body: "again"}), "the archive holds tools/hello twice"},
		{"file and directory", with(entry{name: "tools/hello/inside", body: "x"}), "tools/hello is both a file and a directory of the bundle"},
		{"no manifest", []entry{{name: "README.md", body: "hi"}}, "the bundle has no capability.yaml at its root"},
		{"tool missing", append([]entry{demoFiles()[0]}, demoFiles()[2:]...), `tools[0].path "tools/hello" is not a file in the bundle`},
		{"skill without SKILL.md", append(demoFiles()[:3], entry{name: "skills/demo/notes.md", body: "x"}, demoFiles()[4], demoFiles()[5]),
			`skills[0].path "skills/demo" has no SKILL.md`},
		{"bad manifest", []entry{{name: "capability.yaml", body: "schema: 1\nname: Bad\nversion: 1\ndescription: x\n"}}, `capability.yaml: name "Bad"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := capability.LoadArchive(tarball(t, c.entries...))
			if sbx.ErrorCode(err) != sbx.EInvalid || !strings.Contains(sbx.ErrorMessage(err), c.want) {
				t.Fatalf("got %v (%s), want invalid containing %q", err, sbx.ErrorCode(err), c.want)
			}
		})
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte("PK\x03\x04 a zip file"), "the archive is not gzip-compressed (a .tar.gz is wanted)"},
		{"gzip of no tar", gzipOf(t, []byte("just text, not a tar archive at all, long enough to be read as a header block?")), "not a valid tar.gz"},
		{"too big", make([]byte, capability.MaxArchiveBytes+1), "at most 8388608 are accepted"},
		{"inflates too much", tarball(t, entry{name: "capability.yaml", body: goodManifest}, entry{name: "big", body: strings.Repeat("0", capability.MaxBundleBytes)}),
			"add up to more than 33554432 bytes (at big)"},
		{"too many files", tarball(t, manyFiles(capability.MaxFiles+1)...), "more than 512 files"},
		{"too many entries", tarball(t, manyDirs(2049)...), "the archive holds more than 2048 entries"},
		{"headers inflate", paxHeavy(t, 48), "the archive unpacks to more than 41943040 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := capability.LoadArchive(c.data)
			if sbx.ErrorCode(err) != sbx.EInvalid || !strings.Contains(sbx.ErrorMessage(err), c.want) {
				t.Fatalf("got %v, want invalid containing %q", err, c.want)
			}
		})
	}
}

func gzipOf(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

func manyFiles(n int) []entry {
	out := []entry{{name: "capability.yaml", body: goodManifest}}
	for i := range n {
		out = append(out, entry{name: "files/f" + strconv.Itoa(i), body: "x"})
	}
	return out
}

func manyDirs(n int) []entry {
	out := []entry{{name: "capability.yaml", body: goodManifest}}
	for i := range n {
		out = append(out, entry{name: "d" + strconv.Itoa(i) + "/", typ: tar.TypeDir})
	}
	return out
}

// paxHeavy is an archive of n empty files, each behind a PAX header of
// almost 1 MiB, which a reader parses and does not keep.
func paxHeavy(t *testing.T, n int) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	comment := strings.Repeat("c", 1000<<10)
	for i := range n {
		h := &tar.Header{Name: "f" + strconv.Itoa(i), Typeflag: tar.TypeReg, Mode: 0o644, PAXRecords: map[string]string{"comment": comment}}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// writeDir writes entries (regular files) under dir.
func writeDir(t *testing.T, dir string, entries []entry) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		mode := os.FileMode(e.mode)
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(e.body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadDirAndPack(t *testing.T) {
	dir := t.TempDir()
	writeDir(t, dir, demoFiles())
	data, err := capability.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := capability.LoadArchive(data)
	if err != nil || b.Manifest.Version != "1.2.3" || b.Files["tools/hello"].Mode != 0o755 || len(b.Files) != 6 {
		t.Fatalf("packed: %v %+v", err, b)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "tools", "passwd")); err != nil {
		t.Fatal(err)
	}
	_, err = capability.Pack(dir)
	if !strings.Contains(sbx.ErrorMessage(err), "tools/passwd is a symbolic link: a bundle holds only regular files and directories") {
		t.Fatalf("a symlink in the directory: %v", err)
	}
	if _, err := capability.Pack(filepath.Join(dir, "nope")); !strings.Contains(sbx.ErrorMessage(err), "no such file or directory") {
		t.Fatalf("a missing directory: %v", err)
	}
}
