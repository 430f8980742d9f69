package capability

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// Limits of a bundle. An archive is refused beyond them before it is
// unpacked further, so a small archive that inflates to much is stopped early.
const (
	MaxArchiveBytes = 8 << 20  // a tar.gz as uploaded
	MaxBundleBytes  = 32 << 20 // the files unpacked, summed
	MaxFiles        = 512
	maxEntries      = 4 * MaxFiles           // an archive's entries of every type, directories included
	maxTarBytes     = MaxBundleBytes + 8<<20 // the tar stream unpacked: the files, and room for headers and padding
	maxPathLen      = 256
	maxDepth        = 16
)

// Bundle is a capability's files with its parsed manifest.
type Bundle struct {
	Manifest Manifest
	Files    map[string]File // by path relative to the bundle's root, slash-separated; capability.yaml included
}

// File is one regular file of a bundle.
type File struct {
	Data []byte
	Mode fs.FileMode // 0o644, or 0o755 when any execute bit was set
}

// Paths lists the bundle's files in order.
func (b *Bundle) Paths() []string { return sortedKeys(b.Files) }

// isDir reports whether p is a directory of the bundle: some file is under it.
func (b *Bundle) isDir(p string) bool {
	for name := range b.Files {
		if strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

// LoadDir loads the bundle in directory dir.
func LoadDir(dir string) (*Bundle, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, sbx.Errorf(sbx.EInvalid, "capability bundle %s: %v", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, sbx.Errorf(sbx.EInvalid, "capability bundle %s is not a directory", dir)
	}
	return LoadFS(os.DirFS(dir))
}

// LoadFS loads the bundle at the root of fsys. Only regular files and
// directories may be in it: a link or a device is refused.
func LoadFS(fsys fs.FS) (*Bundle, error) {
	u := unpack{files: map[string]File{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return sbx.Errorf(sbx.EInvalid, "reading %s: %v", name, unwrapPath(err))
		}
		if name == "." || d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return sbx.Invalid(name, "%s is %s: a bundle holds only regular files and directories", name, typeText(d.Type()))
		}
		info, err := d.Info()
		if err != nil {
			return sbx.Errorf(sbx.EInvalid, "reading %s: %v", name, unwrapPath(err))
		}
		if err := u.admit(name, info.Size()); err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return sbx.Errorf(sbx.EInvalid, "reading %s: %v", name, unwrapPath(err))
		}
		return u.add(name, data, info.Mode())
	})
	if err != nil {
		return nil, err
	}
	return newBundle(u.files)
}

// LoadArchive loads a bundle from a tar.gz archive. Its entries are the
// bundle's root, or one top-level directory holding it (as `tar czf b.tar.gz
// mybundle/` makes). An entry with an absolute path, a '..', a link, a
// device or a FIFO is refused, as is an archive beyond the limits.
func LoadArchive(data []byte) (*Bundle, error) {
	if len(data) > MaxArchiveBytes {
		return nil, sbx.Errorf(sbx.EInvalid, "the archive is %d bytes; at most %d are accepted", len(data), MaxArchiveBytes)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, sbx.Errorf(sbx.EInvalid, "the archive is not gzip-compressed (a .tar.gz is wanted): %v", err)
	}
	tr := tar.NewReader(&capped{r: zr, left: maxTarBytes})
	u := unpack{files: map[string]File{}}
	for entries := 1; ; entries++ {
		h, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return newBundle(stripTop(u.files))
		case errors.Is(err, errInflates):
			return nil, sbx.Errorf(sbx.EInvalid, "the archive unpacks to more than %d bytes", maxTarBytes)
		case err != nil:
			return nil, sbx.Errorf(sbx.EInvalid, "the archive is not a valid tar.gz: %v", err)
		case entries > maxEntries:
			return nil, sbx.Errorf(sbx.EInvalid, "the archive holds more than %d entries", maxEntries)
		}
		name := h.Name
		if strings.HasPrefix(name, "/") {
			return nil, sbx.Invalid(name, "archive entry %q has an absolute path; entries must be relative to the bundle", name)
		}
		for strings.HasPrefix(name, "./") {
			name = name[2:]
		}
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			continue
		}
		if msg := badPath(name); msg != "" {
			return nil, sbx.Invalid(h.Name, "archive entry %q %s", h.Name, msg)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return nil, sbx.Invalid(h.Name, "archive entry %q is a link (to %q): a bundle holds only regular files and directories", h.Name, h.Linkname)
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return nil, sbx.Invalid(h.Name, "archive entry %q is a device or a FIFO: a bundle holds only regular files and directories", h.Name)
		default:
			return nil, sbx.Invalid(h.Name, "archive entry %q has type %q, which bundles may not hold: only regular files and directories", h.Name, string(h.Typeflag))
		}
		if err := u.admit(name, h.Size); err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, sbx.Errorf(sbx.EInvalid, "the archive is not a valid tar.gz: reading %s: %v", h.Name, err)
		}
		if err := u.add(name, body, fs.FileMode(h.Mode)); err != nil {
			return nil, err
		}
	}
}

// errInflates is capped's error once its reader gave all it may.
var errInflates = errors.New("the archive unpacks to too much")

// capped reads from r until left bytes were read, then fails with
// errInflates: a bound on the work an archive's headers (PAX records, which
// a tar reader parses and keeps nothing of) could cost.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errInflates
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// unpack gathers a bundle's files within the limits.
type unpack struct {
	files map[string]File
	bytes int64
}

// admit checks a file of size bytes at name against the limits before it is read.
func (u *unpack) admit(name string, size int64) error {
	switch {
	case len(u.files) >= MaxFiles:
		return sbx.Errorf(sbx.EInvalid, "the bundle holds more than %d files", MaxFiles)
	case size < 0 || u.bytes+size > MaxBundleBytes:
		return sbx.Errorf(sbx.EInvalid, "the bundle's files add up to more than %d bytes (at %s)", MaxBundleBytes, name)
	case strings.Count(name, "/") >= maxDepth:
		return sbx.Invalid(name, "%s is more than %d directories deep", name, maxDepth)
	}
	if msg := badPath(name); msg != "" {
		return sbx.Invalid(name, "file %q %s", name, msg)
	}
	return nil
}

func (u *unpack) add(name string, data []byte, mode fs.FileMode) error {
	if _, dup := u.files[name]; dup {
		return sbx.Invalid(name, "the archive holds %s twice", name)
	}
	u.bytes += int64(len(data))
	m := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		m = 0o755
	}
	u.files[name] = File{Data: data, Mode: m}
	return nil
}

// stripTop removes the one top-level directory of files when the manifest
// is in it rather than at the root.
func stripTop(files map[string]File) map[string]File {
	if _, ok := files[ManifestFile]; ok || len(files) == 0 {
		return files
	}
	top := ""
	for name := range files {
		dir, _, found := strings.Cut(name, "/")
		if !found || (top != "" && dir != top) {
			return files
		}
		top = dir
	}
	if _, ok := files[top+"/"+ManifestFile]; !ok {
		return files
	}
	out := make(map[string]File, len(files))
	for name, f := range files {
		out[strings.TrimPrefix(name, top+"/")] = f
	}
	return out
}

// newBundle parses the manifest among files and checks that what it names
// is there: tools and prompts are files, skills directories with a SKILL.md.
func newBundle(files map[string]File) (*Bundle, error) {
	mf, ok := files[ManifestFile]
	if !ok {
		return nil, sbx.Invalid(ManifestFile, "the bundle has no %s at its root", ManifestFile)
	}
	m, err := ParseManifest(mf.Data)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Manifest: m, Files: files}
	dirs := map[string]bool{}
	for name := range files {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			dirs[dir] = true
		}
	}
	for _, name := range b.Paths() {
		if dirs[name] {
			return nil, sbx.Invalid(name, "%s is both a file and a directory of the bundle", name)
		}
	}
	var p problems
	file := func(field, name string) {
		if _, ok := files[name]; !ok {
			p.Add(field, "%s: %s %q is not a file in the bundle", ManifestFile, field, name)
		}
	}
	for i, t := range m.Tools {
		file(fmt.Sprintf("tools[%d].path", i), t.Path)
	}
	for i, pr := range m.Prompts {
		file(fmt.Sprintf("prompts[%d].path", i), pr.Path)
	}
	for i, s := range m.Skills {
		if _, ok := files[s.Path+"/SKILL.md"]; !ok {
			field := fmt.Sprintf("skills[%d].path", i)
			if b.isDir(s.Path) {
				p.Add(field, "%s: %s %q has no SKILL.md", ManifestFile, field, s.Path)
			} else {
				p.Add(field, "%s: %s %q is not a directory in the bundle (a skill is a directory holding SKILL.md)", ManifestFile, field, s.Path)
			}
		}
	}
	return b, p.Err()
}

// Archive packs the bundle as a tar.gz, the form the org's inventory takes:
// its files in order, with their modes and no owner or time.
func (b *Bundle) Archive() ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, name := range b.Paths() {
		for dir := path.Dir(name); dir != "." && !dirs[dir]; dir = path.Dir(dir) {
			dirs[dir] = true
		}
	}
	entries := make([]string, 0, len(dirs)+len(b.Files))
	for d := range dirs {
		entries = append(entries, d+"/")
	}
	entries = append(entries, b.Paths()...)
	sort.Strings(entries)
	for _, name := range entries {
		h := &tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f, ok := b.Files[name]; ok {
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, int64(f.Mode), int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(b.Files[name].Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Pack loads the bundle in dir, checking it, and packs it as a tar.gz.
func Pack(dir string) ([]byte, error) {
	b, err := LoadDir(dir)
	if err != nil {
		return nil, err
	}
	data, err := b.Archive()
	if err == nil && len(data) > MaxArchiveBytes {
		err = sbx.Errorf(sbx.EInvalid, "the bundle in %s packs to %d bytes; at most %d are accepted", dir, len(data), MaxArchiveBytes)
	}
	return data, err
}

func typeText(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
