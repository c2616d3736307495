package cli_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

// TestJournalTail: over a stopped demo family, `journal` prints the whole
// history with each being's events in seq order; `--tail N` prints only
// its newest N lines, the same lines; `--follow` prints the newest 20
// first and then waits (docs/configuration.md#journal).
func TestJournalTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "2", "--dir", dir)
	require.Equal(t, 0, demo.code, demo.stderr)
	root := filepath.Join(dir, "state")
	journal := func(args ...string) []string {
		t.Helper()
		r := run(t, map[string]string{}, append([]string{"journal", "--state-dir", root}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	}
	all := journal()
	require.Greater(t, len(all), 25, "enough history to cut")

	last := map[string]uint64{}
	for _, line := range journal("--format", "json") {
		var e struct {
			BeingID string `json:"being_id"`
			Seq     uint64 `json:"seq"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		assert.Greater(t, e.Seq, last[e.BeingID], "%s: seq %d after seq %d", e.BeingID, e.Seq, last[e.BeingID])
		last[e.BeingID] = e.Seq
	}
	assert.GreaterOrEqual(t, len(last), 3, "the whole family")

	assert.Equal(t, all[len(all)-5:], journal("--tail", "5"))
	assert.Equal(t, []string{""}, journal("--tail", "0"))
	assert.Equal(t, all, journal("--tail", "100000"))
	ada := journal("--being", "Ada")
	assert.Equal(t, ada[len(ada)-3:], journal("--being", "Ada", "--tail", "3"))
	r := run(t, map[string]string{}, "journal", "--state-dir", root, "--tail", "-1")
	assert.Equal(t, 2, r.code, r.stderr)

	// --follow: the newest 20, then nothing until Ctrl-C.
	cmd := exec.Command(testkit.Singularity(t), "journal", "--state-dir", root, "--follow")
	cmd.Env = testkit.Environ(map[string]string{})
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var followed []string
	for len(followed) < 20 {
		select {
		case l := <-lines:
			followed = append(followed, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("journal --follow printed %d lines", len(followed))
		}
	}
	assert.Equal(t, all[len(all)-20:], followed)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for l := range lines {
		t.Errorf("printed past the tail: %s", l)
	}
	require.NoError(t, cmd.Wait(), "Ctrl-C ends --follow with exit 0")
}

// TestJournalTextAmountsAreExact: the text journal prints each amount
// exactly as the journal holds it (the JSON journal's decimal), never
// rounded for reading: the demo's debits have twelve decimal places.
func TestJournalTextAmountsAreExact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo := run(t, map[string]string{}, "demo", "--cycles", "1", "--dir", dir)
	require.Equal(t, 0, demo.code, demo.stderr)
	journal := func(args ...string) []string {
		t.Helper()
		r := run(t, map[string]string{}, append([]string{"journal", "--state-dir", filepath.Join(dir, "state")}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	}
	text, jsonLines := journal(), journal("--format", "json")
	require.Len(t, text, len(jsonLines))
	amounts := 0
	for i, line := range jsonLines {
		var e struct {
			Type   string `json:"type"`
			Amount string `json:"amount"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Amount == "" {
			continue
		}
		amounts++
		key := "amount="
		if e.Type == "tier_changed" {
			key = "remaining="
		}
		assert.Contains(t, strings.Fields(text[i]), key+e.Amount, "%s\n%s", text[i], line)
	}
	assert.Positive(t, amounts, "the demo's journal moves money")
}
