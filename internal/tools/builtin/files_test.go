package builtin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
)

// workspace lays out a real workspace beside a real outside directory:
//
//	outside/secret.txt
//	ws/notes.txt             "hello"
//	ws/sub/deep.txt          "deep"
//	ws/link-in -> notes.txt
//	ws/link-out -> ../outside/secret.txt
//	ws/link-abs -> <abs outside>/secret.txt
//	ws/dir-out -> ../outside
//	ws/dir-in -> sub
//	ws/dangling-out -> ../outside/missing.txt
//	ws/dangling-in -> missing.txt
//	ws/loop -> loop
//	ws/bin.dat               invalid UTF-8
//	ws/fifo                  named pipe
func workspace(t *testing.T) (ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	link := func(target, name string) { require.NoError(t, os.Symlink(target, filepath.Join(ws, name))) }
	write(filepath.Join(outside, "secret.txt"), "outside")
	write(filepath.Join(ws, "notes.txt"), "hello")
	write(filepath.Join(ws, "sub", "deep.txt"), "deep")
	write(filepath.Join(ws, "bin.dat"), "\xff\xfe")
	link("notes.txt", "link-in")
	link("../outside/secret.txt", "link-out")
	link(filepath.Join(outside, "secret.txt"), "link-abs")
	link("../outside", "dir-out")
	link("sub", "dir-in")
	link("../outside/missing.txt", "dangling-out")
	link("missing.txt", "dangling-in")
	link("loop", "loop")
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	return ws, outside
}

func TestFileRead(t *testing.T) {
	ws, _ := workspace(t)
	big := strings.Repeat("a", MaxFileBytes)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "huge.txt"), []byte(big+"a"), 0o644))
	tests := []struct {
		path, code, content string
	}{
		{"notes.txt", "", `{"path":"notes.txt","content":"hello"}`},
		{" sub/deep.txt ", "", `{"path":"sub/deep.txt","content":"deep"}`},
		{"link-in", "", `{"path":"link-in","content":"hello"}`},
		{"dir-in/deep.txt", "", `{"path":"dir-in/deep.txt","content":"deep"}`},
		{"/etc/passwd", CodeInvalidPath, `{"message":"path must be relative with only normal components"}`},
		{"../outside/secret.txt", CodeInvalidPath, ""},
		{"sub/../notes.txt", CodeInvalidPath, ""},
		{"./notes.txt", CodeInvalidPath, ""},
		{"sub//deep.txt", CodeInvalidPath, ""},
		{"sub/", CodeInvalidPath, ""},
		{".", CodeInvalidPath, ""},
		{"link-out", CodeWorkspaceBoundary, `{"message":"path leaves the workspace"}`},
		{"link-abs", CodeWorkspaceBoundary, ""},
		{"dir-out/secret.txt", CodeWorkspaceBoundary, ""},
		{"dangling-out", CodeWorkspaceBoundary, ""},
		{"dangling-in", CodeFileRead, `{"message":"file not found"}`},
		{"missing.txt", CodeFileRead, `{"message":"file not found"}`},
		{"sub", CodeFileRead, `{"message":"not a regular file"}`},
		{"fifo", CodeFileRead, `{"message":"not a regular file"}`},
		{"loop", CodeFileRead, `{"message":"file could not be read"}`},
		{"notes.txt/x", CodeFileRead, ""},
		{"bin.dat", CodeFileRead, `{"message":"file is not valid UTF-8"}`},
		{"big.txt", "", ""},
		{"huge.txt", CodeFileRead, `{"message":"file exceeds 2 MiB"}`},
	}
	tools := testTools(t, Env{Workspace: ws})
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			o := call(tools, nil, FileRead, args("path", tc.path))
			if tc.code == "" {
				requireOutcome(t, o, outcome.Success, "", tc.content)
				return
			}
			requireOutcome(t, o, outcome.Failed, tc.code, tc.content)
		})
	}
}

func TestFileReadPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file; permission denial needs an unprivileged user")
	}
	ws := t.TempDir()
	p := filepath.Join(ws, "private.txt")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o000))
	o := call(testTools(t, Env{Workspace: ws}), nil, FileRead, args("path", "private.txt"))
	requireOutcome(t, o, outcome.Failed, CodeFileRead, `{"message":"permission denied"}`)
}

func TestFileWrite(t *testing.T) {
	tests := []struct {
		name, path, content, code, message string
		check                              func(t *testing.T, ws, outside string)
	}{
		{name: "new file", path: "out.txt", content: "line one\nline two\n", check: func(t *testing.T, ws, _ string) {
			requireFile(t, filepath.Join(ws, "out.txt"), "line one\nline two\n")
		}},
		{name: "empty file", path: "empty.txt", content: "", check: func(t *testing.T, ws, _ string) {
			requireFile(t, filepath.Join(ws, "empty.txt"), "")
		}},
		{name: "creates parents", path: "a/b/c.txt", content: "c", check: func(t *testing.T, ws, _ string) {
			requireFile(t, filepath.Join(ws, "a", "b", "c.txt"), "c")
		}},
		{name: "replaces a regular file", path: "notes.txt", content: "bye", check: func(t *testing.T, ws, _ string) {
			requireFile(t, filepath.Join(ws, "notes.txt"), "bye")
		}},
		{name: "through a symlinked parent inside", path: "dir-in/new.txt", content: "n", check: func(t *testing.T, ws, _ string) {
			requireFile(t, filepath.Join(ws, "sub", "new.txt"), "n")
		}},
		{name: "maximum content", path: "max.txt", content: strings.Repeat("z", MaxFileBytes)},
		{name: "absolute", path: "/tmp/x", code: CodeInvalidPath, message: "path must be relative with only normal components"},
		{name: "dot dot", path: "../outside/x", code: CodeInvalidPath},
		{name: "dot dot inside", path: "sub/../x", code: CodeInvalidPath},
		{name: "symlink leaving", path: "link-out", code: CodeWorkspaceBoundary, message: "path leaves the workspace"},
		{name: "absolute symlink leaving", path: "link-abs", code: CodeWorkspaceBoundary},
		{name: "dangling symlink leaving", path: "dangling-out", code: CodeWorkspaceBoundary},
		{name: "symlinked parent leaving", path: "dir-out/new.txt", code: CodeWorkspaceBoundary},
		{name: "symlinked parent leaving, deeper", path: "dir-out/x/y.txt", code: CodeWorkspaceBoundary},
		{name: "symlink inside", path: "link-in", code: CodeFileWrite, message: "refusing to replace a symlink", check: func(t *testing.T, ws, _ string) {
			requireFile(t, filepath.Join(ws, "notes.txt"), "hello")
			fi, err := os.Lstat(filepath.Join(ws, "link-in"))
			require.NoError(t, err)
			require.NotZero(t, fi.Mode()&os.ModeSymlink)
		}},
		{name: "dangling symlink inside", path: "dangling-in", code: CodeFileWrite, message: "refusing to replace a symlink", check: func(t *testing.T, ws, _ string) {
			_, err := os.Stat(filepath.Join(ws, "missing.txt"))
			require.ErrorIs(t, err, os.ErrNotExist)
		}},
		{name: "directory", path: "sub", code: CodeFileWrite, message: "refusing to replace a non-regular file"},
		{name: "fifo", path: "fifo", code: CodeFileWrite, message: "refusing to replace a non-regular file"},
		{name: "parent is a file", path: "notes.txt/x", code: CodeFileWrite},
		{name: "symlink loop", path: "loop/x", code: CodeFileWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws, outside := workspace(t)
			tools := testTools(t, Env{Workspace: ws})
			o := call(tools, nil, FileWrite, args("path", tc.path, "content", tc.content))
			if tc.code == "" {
				requireOutcome(t, o, outcome.Success, "", `{"path":"`+strings.TrimSpace(tc.path)+`","bytes":`+strconv.Itoa(len(tc.content))+`}`)
			} else {
				msg := ""
				if tc.message != "" {
					msg = `{"message":"` + tc.message + `"}`
				}
				requireOutcome(t, o, outcome.Failed, tc.code, msg)
				requireFile(t, filepath.Join(outside, "secret.txt"), "outside")
				entries, err := os.ReadDir(outside)
				require.NoError(t, err)
				require.Len(t, entries, 1, "nothing was written outside")
			}
			if tc.check != nil {
				tc.check(t, ws, outside)
			}
			requireNoTemp(t, ws)
		})
	}
}

func TestFileWriteKeepsMode(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, "private.txt")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(p, 0o640))
	tools := testTools(t, Env{Workspace: ws})
	o := call(tools, nil, FileWrite, args("path", "private.txt", "content", "new"))
	requireOutcome(t, o, outcome.Success, "", `{"path":"private.txt","bytes":3}`)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	requireFile(t, p, "new")
}

func TestFileWriteReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories; denial needs an unprivileged user")
	}
	ws := t.TempDir()
	ro := filepath.Join(ws, "ro")
	require.NoError(t, os.Mkdir(ro, 0o555))
	t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
	o := call(testTools(t, Env{Workspace: ws}), nil, FileWrite, args("path", "ro/x.txt", "content", "x"))
	requireOutcome(t, o, outcome.Failed, CodeFileWrite, `{"message":"permission denied"}`)
}

func TestFileRoundTrip(t *testing.T) {
	ws := t.TempDir()
	tools := testTools(t, Env{Workspace: ws})
	text := "zażółć gęślą jaźń\ttab\r\n"
	o := call(tools, nil, FileWrite, args("path", "pl/text.md", "content", text))
	require.Equal(t, outcome.Success, o.Status)
	o = call(tools, nil, FileRead, args("path", "pl/text.md"))
	requireOutcome(t, o, outcome.Success, "", `{"path":"pl/text.md","content":"zażółć gęślą jaźń\ttab\r\n"}`)
}

func TestNewWorkspace(t *testing.T) {
	_, err := New(Env{Workspace: filepath.Join(t.TempDir(), "missing")})
	require.Error(t, err)

	// A workspace reached through a symlink is resolved once, so paths
	// inside it are still inside.
	real := t.TempDir()
	alias := filepath.Join(t.TempDir(), "alias")
	require.NoError(t, os.Symlink(real, alias))
	require.NoError(t, os.WriteFile(filepath.Join(real, "a.txt"), []byte("a"), 0o644))
	o := call(testTools(t, Env{Workspace: alias}), nil, FileRead, args("path", "a.txt"))
	requireOutcome(t, o, outcome.Success, "", `{"path":"a.txt","content":"a"}`)
}

func requireFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// requireNoTemp checks no temporary file was left anywhere in ws.
func requireNoTemp(t *testing.T, ws string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		require.NotContains(t, d.Name(), ".tmp-", "leftover temp file %s", p)
		return nil
	}))
}

func BenchmarkFileWrite(b *testing.B) {
	tools, err := New(Env{Workspace: b.TempDir()})
	require.NoError(b, err)
	a := args("path", "notes/today.md", "content", strings.Repeat("x", 8<<10))
	b.ReportAllocs()
	for b.Loop() {
		if o := call(tools, nil, FileWrite, a); o.Status != outcome.Success {
			b.Fatal(string(o.Content))
		}
	}
}

func BenchmarkFileRead(b *testing.B) {
	ws := b.TempDir()
	require.NoError(b, os.MkdirAll(filepath.Join(ws, "notes"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(ws, "notes", "today.md"), []byte(strings.Repeat("x", 8<<10)), 0o644))
	tools, err := New(Env{Workspace: ws})
	require.NoError(b, err)
	a := args("path", "notes/today.md")
	b.ReportAllocs()
	for b.Loop() {
		if o := call(tools, nil, FileRead, a); o.Status != outcome.Success {
			b.Fatal(string(o.Content))
		}
	}
}

// TestPermissionsAsUnprivilegedUser runs the permission tests for real
// when the suite runs as root (which bypasses file modes): it re-executes
// a copy of this test binary as user nobody and requires both tests to
// pass there rather than skip.
func TestPermissionsAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: the permission tests run directly")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	bin := filepath.Join(dir, "builtin.test")
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^(TestFileReadPermission|TestFileWriteReadOnlyDirectory)$", "-test.v")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + os.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestFileReadPermission")
	require.Contains(t, string(out), "--- PASS: TestFileWriteReadOnlyDirectory")
}
