package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

const fixture = "testdata/reference-state-being-v1.json"

func readFixture(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture)
	require.NoError(t, err)
	return data
}

// decodeTree parses JSON keeping numbers as their literal text.
func decodeTree(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// sameTree compares two JSON trees: same keys, same array lengths, equal
// literals; strings under keys ending in "at" are compared as instants.
func sameTree(t testing.TB, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: want object, got %T", path, got)
		for k := range w {
			require.Contains(t, g, k, "%s: field %s dropped", path, k)
			sameTree(t, path+"."+k, w[k], g[k])
		}
		for k := range g {
			require.Contains(t, w, k, "%s: field %s added", path, k)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: want array, got %T", path, got)
		require.Len(t, g, len(w), path)
		for i := range w {
			sameTree(t, path+"["+strconv.Itoa(i)+"]", w[i], g[i])
		}
	case string:
		g, ok := got.(string)
		require.True(t, ok, "%s: want string, got %T", path, got)
		if strings.HasSuffix(path, "at") {
			wt, err1 := time.Parse(time.RFC3339Nano, w)
			gt, err2 := time.Parse(time.RFC3339Nano, g)
			if err1 == nil && err2 == nil {
				require.True(t, wt.Equal(gt), "%s: %s vs %s", path, w, g)
				return
			}
		}
		require.Equal(t, w, g, path)
	default:
		require.Equal(t, want, got, path)
	}
}

func TestReferenceFixtureRoundTrip(t *testing.T) {
	dir := t.TempDir()
	data := readFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), data, FileMode))

	s, err := Open(dir)
	require.NoError(t, err)
	b, err := s.Load()
	require.NoError(t, err)
	assert.Equal(t, "Ada", b.Identity.Name)
	assert.Equal(t, "9.9946", b.Budget.Remaining.String())
	assert.Equal(t, uint64(2400), b.Budget.TotalTokens)
	assert.Len(t, b.Conversation, 6)
	assert.Nil(t, b.Extra)
	require.NoError(t, b.Budget.Check())
	assert.True(t, b.Budget.Starting.Sub(mustParse("0.0054")).Equal(b.Budget.Remaining), "the fixture's one debit")
	assert.True(t, b.Budget.Expected().Equal(b.Budget.Remaining), "the fixture's budget is consistent")

	require.NoError(t, s.Save(b))
	saved, err := os.ReadFile(s.Path(StateFile))
	require.NoError(t, err)
	sameTree(t, "$", decodeTree(t, data), decodeTree(t, saved))
	// Pretty JSON, newline-terminated.
	assert.True(t, bytes.HasPrefix(saved, []byte("{\n  \"schema_version\": \"being-v1\",\n")))
	assert.True(t, bytes.HasSuffix(saved, []byte("}\n")))
}

func TestUnknownTopLevelFieldsSurviveSave(t *testing.T) {
	dir := t.TempDir()
	var tree map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(readFixture(t), &tree))
	tree["future_field"] = json.RawMessage(`{"nested": [1, 2.50, "x"], "flag": true}`)
	tree["a_number"] = json.RawMessage(`12345678901234567890.123`)
	data, err := json.Marshal(tree)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), data, FileMode))

	s, err := Open(dir)
	require.NoError(t, err)
	b, err := s.Load()
	require.NoError(t, err)
	require.Len(t, b.Extra, 2)
	b.Cycle++ // a real change, then save
	require.NoError(t, s.Save(b))

	saved, err := os.ReadFile(s.Path(StateFile))
	require.NoError(t, err)
	got := decodeTree(t, saved).(map[string]any)
	assert.Equal(t, json.Number("12345678901234567890.123"), got["a_number"])
	assert.Equal(t, map[string]any{"nested": []any{json.Number("1"), json.Number("2.50"), "x"}, "flag": true}, got["future_field"])
	assert.Equal(t, json.Number("3"), got["cycle"])

	// And once more through a second load/save.
	b2, err := s.Load()
	require.NoError(t, err)
	require.NoError(t, s.Save(b2))
	again, err := os.ReadFile(s.Path(StateFile))
	require.NoError(t, err)
	assert.Equal(t, string(saved), string(again))
}

func TestNilListsSavedAsEmpty(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, s.Save(&Being{SchemaVersion: SchemaVersion}))
	saved, err := os.ReadFile(s.Path(StateFile))
	require.NoError(t, err)
	assert.NotContains(t, string(saved), "null")
	for _, key := range []string{`"rules": []`, `"conversation": []`, `"recent_actions": []`, `"chat_ids": []`} {
		assert.Contains(t, string(saved), key)
	}
}

func TestDecodeRefusals(t *testing.T) {
	good := string(readFixture(t))
	tests := []struct {
		name, data, want string
	}{
		{"not json", "{", "state: malformed state file p: unexpected end of JSON input"},
		{"empty", "", "state: malformed state file p: unexpected end of JSON input"},
		{"array", "[]", "state: malformed state file p: json: cannot unmarshal array into Go value of type struct { SchemaVersion *string \"json:\\\"schema_version\\\"\" }"},
		{"no schema", `{"cycle": 1}`, "state: malformed state file p: schema_version is missing"},
		{"other schema", `{"schema_version": "being-v2"}`, "state: unsupported state schema being-v2"},
		{"schema not a string", `{"schema_version": 1}`, "state: malformed state file p: json: cannot unmarshal number into Go struct field .schema_version of type string"},
		{"float money", strings.Replace(good, `"remaining": "9.9946"`, `"remaining": "abc"`, 1), `state: malformed state file p: money: "abc": not a decimal number`},
		{"negative spent", strings.Replace(good, `"api_spent": "0.0054"`, `"api_spent": "-1"`, 1), "state: malformed state file p: budget api_spent is negative"},
		{"bad time", strings.Replace(good, `"2026-08-24T22:05:12.573198Z"`, `"yesterday"`, 1), `state: malformed state file p: parsing time "yesterday" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse "yesterday" as "2006"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("p", []byte(tt.data))
			require.Error(t, err)
			assert.Equal(t, fault.ClassState, fault.ClassOf(err))
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "being")
	s, err := Open(dir)
	require.NoError(t, err)
	assertMode(t, dir, DirMode)
	assertMode(t, filepath.Dir(dir), DirMode)

	b := &Being{SchemaVersion: SchemaVersion}
	require.NoError(t, s.Create(b))
	assertMode(t, s.Path(StateFile), FileMode)

	// A save replaces the file: the new file is 0600 even if the old one
	// had been widened by hand.
	require.NoError(t, os.Chmod(s.Path(StateFile), 0o644))
	b.Cycle = 7
	require.NoError(t, s.Save(b))
	assertMode(t, s.Path(StateFile), FileMode)

	j, err := s.OpenJournal(Now(), 0)
	require.NoError(t, err)
	require.NoError(t, j.Append(Started(Now())))
	require.NoError(t, j.Close())
	assertMode(t, s.Path(JournalFile), FileMode)

	a, err := s.OpenArchive()
	require.NoError(t, err)
	require.NoError(t, a.Append(chat.Message{Role: chat.RoleUser, Content: "hi"}))
	require.NoError(t, a.Close())
	assertMode(t, s.Path(ArchiveFile), FileMode)

	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{StateFile, JournalFile, ArchiveFile}, names)
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, want, info.Mode().Perm(), path)
}

// TestStaleTempFilesGoOnlyUnderTheLock: Open, which takes no lock,
// leaves the temporary file of a save (it may be another runtime's, in
// progress); OpenLocked removes it, and nothing else.
func TestStaleTempFilesGoOnlyUnderTheLock(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".state.json.123.tmp")
	require.NoError(t, os.WriteFile(stale, []byte("{"), FileMode))
	other := filepath.Join(dir, "keep.tmp")
	require.NoError(t, os.WriteFile(other, nil, FileMode))
	_, err := Open(dir)
	require.NoError(t, err)
	assert.FileExists(t, stale, "no lock, nothing removed")
	_, lock, err := OpenLocked(dir)
	require.NoError(t, err)
	defer lock.Unlock()
	assert.NoFileExists(t, stale)
	assert.FileExists(t, other)
}

func TestCreateIsExclusive(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.NoError(t, err)
	require.NoError(t, s.Create(&Being{SchemaVersion: SchemaVersion, Cycle: 1}))
	err = s.Create(&Being{SchemaVersion: SchemaVersion, Cycle: 2})
	require.Error(t, err)
	assert.Equal(t, "state: state already exists at "+filepath.Join(dir, StateFile)+"; use --resume or a new directory", err.Error())
	b, err := s.Load()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), b.Cycle)
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(data)
}

// TestTopLevel holds Decode's scan of the top level to what decoding
// into a map finds: every key (escaped ones too) with its value's exact
// bytes, however the values nest strings, brackets and escapes.
func TestTopLevel(t *testing.T) {
	docs := []string{
		`{}`,
		` { "a" : 1 , "b":[1,{"c":"}"}], "d\"e": "x\\\"y}", "f\u0067": {"h": [[], {}]}, "n": null, "t":true,"neg":-1.5e3 } `,
		"{\n  \"schema_version\": \"being-v1\",\n" + `  "s": "[{\\\"",` + "\n  \"z\": false\n}\n",
		string(readFixture(t)),
	}
	for _, doc := range docs {
		var want map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(doc), &want))
		got := map[string]json.RawMessage{}
		var order []string
		require.NoError(t, topLevel([]byte(doc), func(key string, raw []byte) {
			got[key] = raw
			order = append(order, key)
		}))
		assert.Len(t, order, len(want), doc)
		for k, v := range want {
			assert.Equal(t, string(v), string(got[k]), "key %q of %s", k, doc)
		}
	}
	assert.Error(t, topLevel([]byte(`[1]`), func(string, []byte) {}))
}

// TestDecodeSchemaKeyInAnotherCase: encoding/json matches keys in any
// case, and Decode accepts what it always accepted: a schema_version key
// spelled in capitals reads as the schema.
func TestDecodeSchemaKeyInAnotherCase(t *testing.T) {
	data := bytes.Replace(readFixture(t), []byte(`"schema_version"`), []byte(`"SCHEMA_VERSION"`), 1)
	b, err := Decode("state.json", data)
	require.NoError(t, err)
	assert.Equal(t, SchemaVersion, b.SchemaVersion)

	_, err = Decode("state.json", bytes.Replace(readFixture(t), []byte(`"schema_version"`), []byte(`"schema_versio"`), 1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "schema_version is missing")
}

// TestTimeUnmarshal: an instant reads the same whether its string
// carries escapes (read through encoding/json) or not (read as its
// bytes), in any RFC 3339 offset, and anything else is refused.
func TestTimeUnmarshal(t *testing.T) {
	want := time.Date(2026, 12, 7, 3, 4, 5, 500_000_000, time.UTC)
	for _, tc := range []struct {
		json string
		ok   bool
	}{
		{`"2026-12-07T03:04:05.5Z"`, true},
		{`"2026-12-07T03:04:05\u002e5Z"`, true},
		{`"2026-12-07T04:04:05.5+01:00"`, true},
		{`"2026-12-07 03:04:05"`, false},
		{`"2026-12-07T03:04:05\u00e9Z"`, false},
		{`null`, false},
		{`12`, false},
	} {
		var got struct {
			At Time `json:"at"`
		}
		err := json.Unmarshal([]byte(`{"at":`+tc.json+`}`), &got)
		if !tc.ok {
			require.Error(t, err, tc.json)
			continue
		}
		require.NoError(t, err, tc.json)
		require.True(t, want.Equal(got.At.Time), "%s read as %s", tc.json, got.At.Time)
		require.Equal(t, time.UTC, got.At.Location(), tc.json)
	}
}
