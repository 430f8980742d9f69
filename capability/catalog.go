package capability

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/sbxdev/sbx"
)

// The public catalog: bundles shipped in the binary, one directory each
// under catalog/, checked like any upload.
//
//go:embed catalog
var catalogFS embed.FS

var catalog = sync.OnceValues(func() ([]*Bundle, error) { return loadCatalog(catalogFS, "catalog") })

// Catalog returns the public catalog's bundles, by name, newest version first.
func Catalog() ([]*Bundle, error) { return catalog() }

func loadCatalog(fsys fs.FS, root string) ([]*Bundle, error) {
	dirs, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, err
	}
	var out []*Bundle
	seen := map[string]bool{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		sub, err := fs.Sub(fsys, root+"/"+d.Name())
		if err != nil {
			return nil, err
		}
		b, err := LoadFS(sub)
		if err != nil {
			return nil, fmt.Errorf("capability catalog: %s: %w", d.Name(), err)
		}
		key := b.Manifest.Name + "@" + b.Manifest.Version
		if seen[key] {
			return nil, fmt.Errorf("capability catalog: %s: %s %s is in the catalog twice", d.Name(), b.Manifest.Name, b.Manifest.Version)
		}
		seen[key] = true
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Manifest, out[j].Manifest
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return CompareVersions(a.Version, b.Version) > 0
	})
	return out, nil
}

// CatalogBundle finds a capability of the catalog at version, or at its
// newest version when version is "".
func CatalogBundle(name, version string) (*Bundle, error) {
	all, err := Catalog()
	if err != nil {
		return nil, err
	}
	var versions []string
	byVersion := map[string]*Bundle{}
	for _, b := range all {
		if b.Manifest.Name == name {
			versions = append(versions, b.Manifest.Version)
			byVersion[b.Manifest.Version] = b
		}
	}
	if len(versions) == 0 {
		return nil, sbx.Errorf(sbx.ENotFound, "capability %s is not in the catalog", name)
	}
	if version == "" {
		version = Newest(versions)
	}
	b, ok := byVersion[version]
	if !ok {
		return nil, sbx.Errorf(sbx.ENotFound, "capability %s has no version %s in the catalog (it has %s)", name, version, strings.Join(versions, ", "))
	}
	return b, nil
}
