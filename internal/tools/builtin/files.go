package builtin

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/tools/outcome"
)

// maxLinks bounds symlink hops while resolving a path, like the kernel's
// ELOOP limit.
const maxLinks = 40

// errLinkLoop reports a path with too many symlink hops.
var errLinkLoop = errors.New("too many levels of symbolic links")

// The failures a file tool shows the model. They never quote a path.
var (
	badPath       = outcome.Failure(CodeInvalidPath, "path must be relative with only normal components")
	leavesSpace   = outcome.Failure(CodeWorkspaceBoundary, "path leaves the workspace")
	notFound      = outcome.Failure(CodeFileRead, "file not found")
	notRegular    = outcome.Failure(CodeFileRead, "not a regular file")
	tooLarge      = outcome.Failure(CodeFileRead, "file exceeds 2 MiB")
	notUTF8       = outcome.Failure(CodeFileRead, "file is not valid UTF-8")
	readDenied    = outcome.Failure(CodeFileRead, "permission denied")
	readFailed    = outcome.Failure(CodeFileRead, "file could not be read")
	readRaced     = outcome.Failure(CodeFileRead, "file changed while it was read")
	replaceLink   = outcome.Failure(CodeFileWrite, "refusing to replace a symlink")
	replaceOther  = outcome.Failure(CodeFileWrite, "refusing to replace a non-regular file")
	writeDenied   = outcome.Failure(CodeFileWrite, "permission denied")
	parentFailed  = outcome.Failure(CodeFileWrite, "parent directory could not be created")
	writeFailed   = outcome.Failure(CodeFileWrite, "file could not be written")
	pathArgs      = field{key: "path", max: MaxPathBytes}
	contentArgs   = field{key: "content", max: MaxFileBytes, content: true}
	newFileMode   = fs.FileMode(0o644)
	newFolderMode = fs.FileMode(0o755)
)

// normalPath reports whether p is relative with only normal components:
// no leading "/", no empty, "." or ".." component.
func normalPath(p string) bool {
	if filepath.IsAbs(p) {
		return false
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// resolve returns the absolute path rel names under the workspace with
// every existing symlink followed. Components past the first missing one
// are joined lexically: a missing directory cannot be a link. The result
// may lie outside the workspace; the caller checks.
func (t *Tools) resolve(rel string) (string, error) {
	cur := t.root
	pending := strings.Split(rel, "/")
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, pending...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinks {
			return "", errLinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return cur, nil
}

// inside returns abs relative to the workspace, and whether abs is within
// it (the workspace itself counts as within, as ".").
func (t *Tools) inside(abs string) (string, bool) {
	rel, err := filepath.Rel(t.root, abs)
	if err != nil {
		return "", false
	}
	return rel, rel == "." || filepath.IsLocal(rel)
}

// locate validates the path argument and resolves it inside the
// workspace. It returns the resolved path relative to the workspace, or
// the failure to show.
func (t *Tools) locate(p string, ioFailure outcome.Outcome) (string, *outcome.Outcome) {
	if !normalPath(p) {
		return "", &badPath
	}
	abs, err := t.resolve(p)
	if err != nil {
		return "", &ioFailure
	}
	rel, ok := t.inside(abs)
	if !ok {
		return "", &leavesSpace
	}
	return rel, nil
}

// readFile is singularity_file_read: one regular UTF-8 file of at most
// MaxFileBytes inside the workspace, following symlinks that stay inside.
func (t *Tools) readFile(args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, pathArgs)
	if bad != nil {
		return *bad
	}
	rel, bad := t.locate(v[0], readFailed)
	if bad != nil {
		return *bad
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return readFailed
	}
	defer root.Close()
	// Check the kind before opening: opening a FIFO would block.
	fi, err := root.Lstat(rel)
	if err != nil {
		return readError(err)
	}
	if !fi.Mode().IsRegular() {
		return notRegular
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return readError(err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return readFailed
	}
	if !fi.Mode().IsRegular() {
		return notRegular
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return readError(err)
	}
	if len(data) > MaxFileBytes {
		return tooLarge
	}
	if !utf8.Valid(data) {
		return notUTF8
	}
	return succeed(struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}{v[0], string(data)})
}

func readError(err error) outcome.Outcome {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notFound
	case errors.Is(err, fs.ErrPermission):
		return readDenied
	case errors.Is(err, syscall.ELOOP):
		// The final component became a symlink after it was resolved.
		return readRaced
	default:
		return readFailed
	}
}

// writeFile is singularity_file_write: atomically create or replace one
// regular file inside the workspace. The bytes go to a temporary file in
// the destination directory, which is synced and renamed over the target;
// an existing symlink or non-regular file at the target is refused. The
// mode of a replaced file is kept; new files are 0644 and new directories
// 0755, less the umask.
func (t *Tools) writeFile(args json.RawMessage) outcome.Outcome {
	v, bad := parseArgs(args, pathArgs, contentArgs)
	if bad != nil {
		return *bad
	}
	p, content := v[0], v[1]
	// The whole path, symlinks followed, must stay inside.
	if _, bad := t.locate(p, writeFailed); bad != nil {
		return *bad
	}
	// The target is the last component inside the resolved parent, so a
	// symlink there is seen (and refused) rather than followed.
	dir := "."
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		var bad *outcome.Outcome
		if dir, bad = t.locate(p[:i], writeFailed); bad != nil {
			return *bad
		}
	}
	target := filepath.Join(dir, filepath.Base(p))

	root, err := os.OpenRoot(t.root)
	if err != nil {
		return writeFailed
	}
	defer root.Close()
	if dir != "." {
		if err := root.MkdirAll(dir, newFolderMode); err != nil {
			return writeError(err, parentFailed)
		}
	}
	mode, replacing := newFileMode, false
	switch fi, err := root.Lstat(target); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return writeError(err, writeFailed)
	case fi.Mode()&fs.ModeSymlink != 0:
		return replaceLink
	case !fi.Mode().IsRegular():
		return replaceOther
	default:
		mode, replacing = fi.Mode().Perm(), true
	}

	tmp := filepath.Join(dir, "."+filepath.Base(p)+".tmp-"+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return writeError(err, writeFailed)
	}
	ok := false
	defer func() {
		if !ok {
			_ = root.Remove(tmp)
		}
	}()
	_, err = f.WriteString(content)
	if err == nil && replacing {
		err = f.Chmod(mode) // keep the replaced file's exact mode
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, target)
	}
	if err != nil {
		return writeError(err, writeFailed)
	}
	ok = true
	if d, err := root.Open(dir); err == nil {
		// Make the rename durable; a failed directory sync leaves the
		// new file in place, so it is not reported as a failed write.
		_ = d.Sync()
		_ = d.Close()
	}
	return succeed(struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	}{p, len(content)})
}

func writeError(err error, fallback outcome.Outcome) outcome.Outcome {
	if errors.Is(err, fs.ErrPermission) {
		return writeDenied
	}
	return fallback
}
