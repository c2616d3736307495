package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/supervision/fault"
)

func fixtureIdentity(t *testing.T) Identity {
	t.Helper()
	b, err := Decode(fixture, readFixture(t))
	require.NoError(t, err)
	return b.Identity
}

func freshBeing(id Identity) func() (*Being, error) {
	return func() (*Being, error) {
		now := Now()
		return &Being{
			SchemaVersion: SchemaVersion,
			Identity:      id,
			Status:        StatusStarting,
			Budget:        Budget{Starting: money.FromInt(10), Remaining: money.FromInt(10)},
			StartedAt:     now,
			UpdatedAt:     now,
		}, nil
	}
}

func writeState(t *testing.T, dir string, data []byte) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, DirMode))
	path := filepath.Join(dir, StateFile)
	require.NoError(t, os.WriteFile(path, data, FileMode))
	return path
}

func TestBootFresh(t *testing.T) {
	id := fixtureIdentity(t)
	dir := filepath.Join(t.TempDir(), "new")
	s, b, resumed, err := Boot(dir, false, id, freshBeing(id))
	require.NoError(t, err)
	assert.False(t, resumed)
	assert.Equal(t, dir, s.Dir())
	assert.Equal(t, id, b.Identity)
	assertMode(t, dir, DirMode)
	assertMode(t, filepath.Join(dir, StateFile), FileMode)
	loaded, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, b.Identity, loaded.Identity)

	// Then the same directory resumes.
	_, again, resumed, err := Boot(dir, true, id, freshBeing(id))
	require.NoError(t, err)
	assert.True(t, resumed)
	assert.Equal(t, "10", again.Budget.Remaining.String())
}

func TestBootResumesReferenceState(t *testing.T) {
	id := fixtureIdentity(t)
	dir := t.TempDir()
	writeState(t, dir, readFixture(t))
	_, b, resumed, err := Boot(dir, true, id, freshBeing(id))
	require.NoError(t, err)
	assert.True(t, resumed)
	assert.Equal(t, uint64(2), b.Cycle)
}

func TestBootGates(t *testing.T) {
	id := fixtureIdentity(t)
	good := string(readFixture(t))
	otherID := func(mut func(*Identity)) Identity { i := id; mut(&i); return i }

	tests := []struct {
		name   string
		state  *string // nil: no state.json
		resume bool
		id     Identity
		want   string // exact sentence; "<path>" is replaced by the state file path
		prefix bool   // want is only a prefix
	}{
		{name: "exists without resume", state: &good, id: id,
			want: "state: state already exists at <path>; use --resume or a new directory"},
		{name: "resume without state", resume: true, id: id,
			want: "state: resume requested but no state exists"},
		{name: "identity name differs", state: &good, resume: true, id: otherID(func(i *Identity) { i.Name = "Bo" }),
			want: "state: resume identity does not match configuration"},
		{name: "identity policy sequence differs", state: &good, resume: true, id: otherID(func(i *Identity) { i.PolicySequence = 2 }),
			want: "state: resume identity does not match configuration"},
		{name: "identity digest differs", state: &good, resume: true, id: otherID(func(i *Identity) { i.CodeDigest = strings.Repeat("e", 64) }),
			want: "state: resume identity does not match configuration"},
		{name: "other schema", state: ptr(strings.Replace(good, `"being-v1"`, `"being-v0"`, 1)), resume: true, id: id,
			want: "state: unsupported state schema being-v0"},
		{name: "truncated", state: ptr(good[:len(good)/2]), resume: true, id: id,
			want: "state: malformed state file <path>: unexpected end of JSON input"},
		{name: "garbage", state: ptr("\x00\x01not json"), resume: true, id: id,
			want: "state: malformed state file <path>: invalid character", prefix: true},
		{name: "empty", state: ptr(""), resume: true, id: id,
			want: "state: malformed state file <path>: unexpected end of JSON input"},
		{name: "bad money", state: ptr(strings.Replace(good, `"earned": "0"`, `"earned": 1e999`, 1)), resume: true, id: id,
			want: `state: malformed state file <path>: money: "1e999": decimal out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, StateFile)
			var before [32]byte
			if tt.state != nil {
				writeState(t, dir, []byte(*tt.state))
				before = fileHash(t, path)
			}
			_, _, _, err := Boot(dir, tt.resume, tt.id, func() (*Being, error) {
				t.Fatal("a refused boot must not build a being")
				return nil, nil
			})
			require.Error(t, err)
			assert.Equal(t, fault.ClassState, fault.ClassOf(err))
			assert.Equal(t, 4, fault.ExitCode(err))
			want := strings.ReplaceAll(tt.want, "<path>", path)
			if tt.prefix {
				assert.True(t, strings.HasPrefix(err.Error(), want), err.Error())
			} else {
				assert.Equal(t, want, err.Error())
			}
			if tt.state != nil {
				assert.Equal(t, before, fileHash(t, path), "state.json must be left untouched")
			} else {
				assert.NoFileExists(t, path)
			}
		})
	}
}

func TestBootUnreadableState(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	id := fixtureIdentity(t)
	dir := t.TempDir()
	path := writeState(t, dir, readFixture(t))
	require.NoError(t, os.Chmod(path, 0o000))
	t.Cleanup(func() { _ = os.Chmod(path, FileMode) })
	_, _, _, err := Boot(dir, true, id, freshBeing(id))
	require.Error(t, err)
	assert.Equal(t, "state: cannot read state file "+path+": open "+path+": permission denied", err.Error())
	assert.True(t, errors.Is(err, os.ErrPermission))
}

func TestBootStateIsADirectory(t *testing.T) {
	id := fixtureIdentity(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, StateFile), DirMode))
	for _, resume := range []bool{false, true} {
		_, _, _, err := Boot(dir, resume, id, freshBeing(id))
		require.Error(t, err)
		assert.Equal(t, "state: state file "+filepath.Join(dir, StateFile)+" is not a regular file", err.Error())
	}
}

func TestBootFreshConstructorError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x")
	_, _, _, err := Boot(dir, false, Identity{}, func() (*Being, error) { return nil, errors.New("boom") })
	require.ErrorContains(t, err, "boom")
	assert.NoDirExists(t, dir)
}

func ptr(s string) *string { return &s }

// TestCheckOpenIdentity: fields the configuration left open are taken
// from the state on resume (the generated agent id, the hostname of the
// first start), while a field it set must still match.
func TestCheckOpenIdentity(t *testing.T) {
	stored := fixtureIdentity(t)
	dir := t.TempDir()
	writeState(t, dir, readFixture(t))
	open := IdentityAgentID | IdentityHost | IdentityCodeDigest | IdentityPolicySequence
	configured := stored
	configured.AgentID = "3f0c9d1e-0000-4000-8000-000000000000" // generated anew this start
	configured.Host = "another-host"
	configured.CodeDigest = ""
	configured.PolicySequence = 0

	b, resumed, err := CheckOpen(dir, true, configured, open, freshBeing(configured))
	require.NoError(t, err)
	assert.True(t, resumed)
	assert.Equal(t, stored, b.Identity, "the being keeps its own identity")

	_, _, err = CheckOpen(dir, true, configured, open&^IdentityHost, freshBeing(configured))
	assert.EqualError(t, err, "state: resume identity does not match configuration", "a host set must match")
	_, _, err = Check(dir, true, configured, freshBeing(configured))
	assert.EqualError(t, err, "state: resume identity does not match configuration", "nothing open: every field compared")

	fresh := filepath.Join(t.TempDir(), "fresh")
	b, resumed, err = CheckOpen(fresh, false, configured, open, freshBeing(configured))
	require.NoError(t, err)
	assert.False(t, resumed)
	assert.Equal(t, configured, b.Identity, "a fresh being takes the defaults")
}

func TestIdentityAdopt(t *testing.T) {
	stored := fixtureIdentity(t)
	var blank Identity
	assert.Equal(t, blank, blank.Adopt(stored, 0))
	all := IdentityAgentID | IdentityRole | IdentityEnvironment | IdentityHost | IdentityWorkloadID |
		IdentityWorkloadPublicKey | IdentityExecutableDigest | IdentityCodeDigest | IdentityPolicyDigest | IdentityPolicySequence
	got := blank.Adopt(stored, all)
	want := stored
	want.Name, want.Ticker, want.AgentType, want.Specialty = "", "", "", "" // the persona is never open
	assert.Equal(t, want, got)
}
