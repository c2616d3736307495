package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// journalSeeds are lines in the shape of docs/state.md#the-journal, as the
// reference and this runtime write them.
var journalSeeds = []string{
	`{"type":"started","at":"2026-08-24T22:05:12.573198Z"}`,
	`{"type":"cycle_started","at":"2026-08-24T22:05:12.600000Z","cycle":1}`,
	`{"type":"model_completed","at":"2026-08-24T22:05:13.000000Z","cycle":1,"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}}`,
	`{"type":"cost_debited","at":"2026-08-24T22:05:13.000001Z","cycle":1,"amount":"0.000235"}`,
	`{"type":"tool_finished","at":"2026-08-24T22:05:13.100000Z","cycle":1,"tool":"singularity_memory_remember","status":"success"}`,
	`{"type":"revenue_credited","at":"2026-08-24T22:05:13.200000Z","cycle":1,"amount":"2.5","source":"finance__invoice"}`,
	`{"type":"warning","at":"2026-08-24T22:05:13.300000Z","cycle":1,"message":"activity journal: removed a torn last line of 17 bytes"}`,
	`{"type":"stopped","at":"2026-08-24T22:05:14.708994Z","cycle":2,"status":"stopped"}`,
}

// FuzzReadJournal writes arbitrary bytes as a journal and reads it back:
// ReadJournal never panics; it either returns one event per line of a
// newline-terminated file or a state error; and a journal it accepts,
// followed by a torn tail (bytes without a newline, as a crash during an
// append leaves them), reports ErrTornLine.
func FuzzReadJournal(f *testing.F) {
	whole := strings.Join(journalSeeds, "\n") + "\n"
	f.Add([]byte(whole), []byte(`{"type":"cost_debited","at":"2026-08-24T22:0`))
	f.Add([]byte(whole[:len(whole)/2]), []byte(`x`))
	f.Add([]byte(""), []byte(`{`))
	f.Add([]byte(journalSeeds[0]+"\n"+journalSeeds[3]+"\n"), []byte(journalSeeds[4]))
	f.Add([]byte(journalSeeds[0]+"\r\n"), []byte(" "))
	f.Add([]byte(journalSeeds[0]+"\n\n"+journalSeeds[1]+"\n"), []byte("}"))
	f.Add([]byte(journalSeeds[0]+"\ngarbage\n"+journalSeeds[1]+"\n"), []byte(journalSeeds[2]))
	f.Add([]byte(`{"type":"started","seq":1,"at":"2026-08-24T22:05:12.573198Z"}`+"\n"), []byte(`{"type":"cycle_st`))
	f.Add([]byte(`{"type":"cost_debited","at":"2026-08-24T22:05:13Z","cycle":1,"amount":1e999999999}`+"\n"), []byte("\x00"))
	f.Add([]byte(`{"type":"cost_debited","at":"not a time","cycle":-1,"amount":"x"}`+"\n"), []byte("\xff"))
	f.Add([]byte("null\n[]\n\"s\"\n{}\n"), []byte("{}"))
	f.Add([]byte(journalSeeds[0]+"\nnull\n"), []byte("n"))
	for _, s := range journalSeeds {
		f.Add([]byte(s+"\n"), []byte(s[:len(s)-1]))
	}
	// Inputs run one at a time in each process: one file serves them all.
	path := filepath.Join(f.TempDir(), "activity.jsonl")
	f.Fuzz(func(t *testing.T, data, tail []byte) {
		if len(data)+len(tail) > 64<<10 {
			return
		}
		events, err := readJournal(t, path, data)
		if err != nil {
			if len(data) > 0 && data[len(data)-1] != '\n' && !errors.Is(err, state.ErrTornLine) {
				// The last line is torn; only a bad line before it may
				// be reported instead.
				whole := data[:bytes.LastIndexByte(data, '\n')+1]
				if _, werr := readJournal(t, path, whole); werr == nil {
					t.Fatalf("valid journal %q with a torn tail: %v, want ErrTornLine", data, err)
				}
			}
			return
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("accepted a journal with a torn last line: %q", data)
		}
		lines := bytes.Split(data, []byte("\n"))
		lines = lines[:len(lines)-1] // after the last newline: nothing
		if len(events) != len(lines) {
			t.Fatalf("%d lines read as %d events: %q", len(lines), len(events), data)
		}
		for i, line := range lines {
			if !isObject(line) {
				t.Fatalf("line %d %q accepted, not a JSON object", i+1, line)
			}
		}

		// The same journal with a torn tail.
		tail = bytes.ReplaceAll(tail, []byte("\n"), nil)
		if len(tail) == 0 {
			tail = []byte(`{"type":"warn`)
		}
		_, err = readJournal(t, path, append(bytes.Clone(data), tail...))
		if !errors.Is(err, state.ErrTornLine) {
			t.Fatalf("valid journal %q with torn tail %q: %v, want ErrTornLine", data, tail, err)
		}
	})
}

// readJournal writes data at path, reads it with ReadJournal and checks
// that any error is a state error.
func readJournal(t *testing.T, path string, data []byte) ([]state.Event, error) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	events, err := state.ReadJournal(path)
	if err != nil && fault.ClassOf(err) != fault.ClassState {
		t.Fatalf("ReadJournal(%q): %v has class %v, want state", data, err, fault.ClassOf(err))
	}
	return events, err
}

// isObject reports whether line is one JSON object.
func isObject(line []byte) bool {
	trimmed := bytes.TrimLeft(line, " \t\r")
	return json.Valid(line) && len(trimmed) > 0 && trimmed[0] == '{'
}

const fixture = "testdata/reference-state-being-v1.json"

// FuzzLoad writes arbitrary bytes as state.json and loads it: Load never
// panics and never writes (the file stays byte for byte, nothing is
// added to the directory); malformed JSON, a schema other than being-v1
// and a negative budget field are refused with a state error; whatever is
// accepted is a being-v1 state with a valid budget.
func FuzzLoad(f *testing.F) {
	ref, err := os.ReadFile(fixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ref)
	for _, n := range []int{0, 1, 17, len(ref) / 3, len(ref) / 2, len(ref) - 2, len(ref) - 1} {
		f.Add(ref[:n])
	}
	mutate := func(old, repl string) {
		if !bytes.Contains(ref, []byte(old)) {
			f.Fatalf("fixture lacks %q", old)
		}
		f.Add(bytes.Replace(ref, []byte(old), []byte(repl), 1))
	}
	mutate(`"schema_version": "being-v1"`, `"schema_version": "being-v2"`)
	mutate(`"schema_version": "being-v1",`, ``)
	mutate(`"schema_version": "being-v1"`, `"schema_version": null`)
	mutate(`"schema_version": "being-v1"`, `"schema_version": 1`)
	mutate(`"schema_version": "being-v1"`, `"SCHEMA_VERSION": "being-v1"`)
	mutate(`"schema_version": "being-v1",`, `"schema_version": "being-v1", "schema_version": "being-v0",`)
	mutate(`"starting": "10"`, `"starting": "-10"`)
	mutate(`"starting": "10"`, `"starting": 10`)
	mutate(`"starting": "10"`, `"starting": 1e999999999`)
	mutate(`"starting": "10"`, `"starting": "0e-9999999"`)
	mutate(`"remaining": "9.9946"`, `"remaining": "-0.5"`)
	mutate(`"api_spent": "0.0054"`, `"api_spent": "-0.0054"`)
	mutate(`"earned": "0"`, `"earned": "NaN"`)
	mutate(`"total_tokens": 2400`, `"total_tokens": -1`)
	mutate(`"total_tokens": 2400`, `"total_tokens": 2400.5`)
	mutate(`"cycle": 2`, `"cycle": 18446744073709551616`)
	mutate(`"started_at": "2026-08-24T22:05:12.573198Z"`, `"started_at": "yesterday"`)
	mutate(`"conversation": [`, `"conversation": null, "x": [`)
	mutate(`"budget": {`, `"Budget": {"starting": "-1"}, "budget": {`)
	mutate(`"status": "stopped"`, `"status": "stopped", "future_field": {"k": [1, 2.5, null]}`)
	mutate(`"role": "tool"`, `"role": 7`)
	f.Add(append([]byte("\xef\xbb\xbf"), ref...))
	f.Add(append(bytes.Clone(ref), []byte("{}")...))
	for _, s := range []string{`{"schema_version":"being-v1"}`, `{"schema_version":"being-v1","budget":null}`, `null`, `[]`, `""`, `{}`, "\x00", ``} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	path := filepath.Join(dir, state.StateFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := state.Load(dir)

		after, rerr := os.ReadFile(path)
		if rerr != nil || !bytes.Equal(after, data) {
			t.Fatalf("Load changed state.json: %q became %q (%v)", data, after, rerr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("Load left %d entries in the directory", len(entries))
		}
		if err != nil {
			if fault.ClassOf(err) != fault.ClassState || b != nil {
				t.Fatalf("Load(%q) = %v, %v: want a state error and no being", data, b, err)
			}
			return
		}
		if !json.Valid(data) || !isObject(bytes.TrimSpace(data)) {
			t.Fatalf("Load accepted malformed JSON %q", data)
		}
		if b == nil || b.SchemaVersion != state.SchemaVersion {
			t.Fatalf("Load(%q) accepted schema %+v", data, b)
		}
		for name, v := range map[string]interface{ Sign() int }{
			"starting": b.Budget.Starting, "api_spent": b.Budget.APISpent,
			"instance_spent": b.Budget.InstanceSpent, "earned": b.Budget.Earned,
		} {
			if v.Sign() < 0 {
				t.Fatalf("Load(%q) accepted a negative %s", data, name)
			}
		}
	})
}
