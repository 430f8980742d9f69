package template

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteTree writes the tree at root as a tar stream: directories, regular
// files (hard links as links to the first of their inode), symlinks as
// they are, owners and modes kept; device nodes, sockets and FIFOs are
// left out (a container runtime gives every container its own /dev).
func WriteTree(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	seen := map[[2]uint64]string{} // device and inode → the first name written
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode()
		if mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket|fs.ModeNamedPipe) != 0 {
			return nil
		}
		link := ""
		if mode&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		st, _ := fi.Sys().(*syscall.Stat_t)
		if st != nil {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
			if mode.IsRegular() && st.Nlink > 1 {
				key := [2]uint64{uint64(st.Dev), st.Ino}
				if first, ok := seen[key]; ok {
					hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				} else {
					seen[key] = hdr.Name
				}
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
