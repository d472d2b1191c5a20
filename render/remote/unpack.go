package remote

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits caps what Unpack writes.
type Limits struct {
	// MaxFiles caps the entries written: regular files and directories
	// together, the directories a file's path implies included (a directory
	// costs an inode and a block on disk like a small file does).
	MaxFiles     int
	MaxBytes     int64 // all files together, uncompressed
	MaxFileBytes int64 // any one file
}

// Unpack extracts the gzip-compressed tar archive r into dir, which must exist.
// It writes only regular files and directories: an entry with an absolute path,
// a ".." element, a symlink or hard link, a device or any other special type is
// an Invalid *Error, and more files or bytes than lim allows a TooBig *Error
// (counted as the data streams, so a compression bomb stops at the limit). name
// (the URL) is only used in errors. On error dir may hold a partial tree: the
// cache unpacks into a temporary directory and drops it.
func Unpack(r io.Reader, dir, name string, lim Limits) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return errorf(Invalid, name, "not a gzip archive: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	files := 0
	var total int64
	// dirs holds the directories made so far (slash paths), counted with the
	// files against MaxFiles.
	dirs := map[string]bool{}
	mkdir := func(rel string) error {
		var missing []string
		for d := rel; d != "." && d != "" && !dirs[d]; d = path.Dir(d) {
			missing = append(missing, d)
		}
		if files+len(dirs)+len(missing) > lim.MaxFiles {
			return errorf(TooBig, name, "the archive has more than %d entries (files and directories together); a chart needs far fewer", lim.MaxFiles)
		}
		for _, d := range missing {
			dirs[d] = true
		}
		if len(missing) == 0 {
			return nil
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(rel)), 0o700); err != nil {
			return fmt.Errorf("unpacking %s: %w", Redact(name), err)
		}
		return nil
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errorf(Invalid, name, "reading the archive: %v", err)
		}
		rel, err := entryPath(h.Name)
		if err != nil {
			return &Error{Reason: Invalid, URL: Redact(name), Err: err}
		}
		if rel == "" {
			continue
		}
		dest := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := mkdir(rel); err != nil {
				return err
			}
		case tar.TypeReg:
			files++
			if files+len(dirs) > lim.MaxFiles {
				return errorf(TooBig, name, "the archive has more than %d entries (files and directories together); a chart needs far fewer", lim.MaxFiles)
			}
			if err := mkdir(path.Dir(rel)); err != nil {
				return err
			}
			if h.Size > lim.MaxFileBytes {
				return errorf(TooBig, name, "archive entry %s is %d bytes, over the limit of %d per file", rel, h.Size, lim.MaxFileBytes)
			}
			if total+h.Size > lim.MaxBytes {
				return errorf(TooBig, name, "the archive unpacks to more than %d bytes", lim.MaxBytes)
			}
			if err := writeEntry(tr, dest, h.Size); err != nil {
				return fmt.Errorf("unpacking %s: %w", Redact(name), err)
			}
			total += h.Size
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			// PAX headers: metadata only.
		case tar.TypeSymlink, tar.TypeLink:
			return errorf(Invalid, name, "archive entry %s is a link (to %q); links are not unpacked", rel, h.Linkname)
		default:
			return errorf(Invalid, name, "archive entry %s has type %q; only files and directories are unpacked", rel, string(h.Typeflag))
		}
	}
}

// entryPath cleans an archive entry name; "" means the archive root.
func entryPath(name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	if strings.HasPrefix(n, "/") || (len(n) > 1 && n[1] == ':') {
		return "", fmt.Errorf("archive entry %q has an absolute path", name)
	}
	for _, el := range strings.Split(n, "/") {
		if el == ".." {
			return "", fmt.Errorf("archive entry %q leaves the archive (..)", name)
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", nil
	}
	return c, nil
}

func writeEntry(r io.Reader, dest string, size int64) error {
	// O_EXCL: an archive naming a file twice is refused rather than overwriting.
	f, err := os.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("entry %s is truncated", filepath.Base(dest))
	}
	return err
}
