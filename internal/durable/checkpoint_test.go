package durable

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// TestOvertakingCheckpointArchivesTheBacklogFirst: a background
// checkpoint whose archive append failed can be overtaken by the next
// checkpoint, which no longer carries those messages. That one appends
// them first, in order, before its own and before its state.json drops
// them; the failed one, tried again, appends nothing twice and does not
// put its older state.json back.
func TestOvertakingCheckpointArchivesTheBacklogFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	id := testkit.Identity()
	st := &state.Being{SchemaVersion: state.SchemaVersion, Identity: id, Status: state.StatusStarting,
		Budget: state.Budget{Starting: testkit.USD("10"), Remaining: testkit.USD("10")}, StartedAt: state.Now(), UpdatedAt: state.Now(), JournalSeq: new(uint64)}
	store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
	require.NoError(t, err)
	var full atomic.Bool
	store.SetFault(func(file string) error {
		if file == state.ArchiveFile && full.Load() {
			return syscall.ENOSPC
		}
		return nil
	})
	archive, err := store.OpenArchive()
	require.NoError(t, err)
	defer archive.Close()

	var lock sync.Mutex
	backlog := &state.Encoded{}
	checkpointOf := func(generation, seq uint64, texts ...string) *checkpoint {
		var archived state.Encoded
		for _, text := range texts {
			archived = append(archived, state.Pack(state.EncodeMessage(chat.Message{Role: chat.RoleUser, Content: text})))
		}
		snapshot := *st
		snapshot.JournalSeq = &seq
		return &checkpoint{archived: archived, seq: seq, generation: generation, lock: &lock, backlog: backlog,
			encode: func() ([]byte, error) { return state.Encode(&snapshot) }}
	}
	write := func(cp *checkpoint) error {
		lock.Lock()
		defer lock.Unlock()
		return cp.write(archive, store)
	}
	archived := func() []string {
		f, err := os.Open(filepath.Join(dir, state.ArchiveFile))
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		defer f.Close()
		var texts []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var m chat.Message
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
			texts = append(texts, m.Content)
		}
		require.NoError(t, sc.Err())
		return texts
	}
	savedSeq := func() uint64 {
		saved, err := state.Load(dir)
		require.NoError(t, err)
		require.NotNil(t, saved.JournalSeq)
		return *saved.JournalSeq
	}

	first := checkpointOf(2, 10, "one", "two")
	full.Store(true)
	require.ErrorIs(t, write(first), syscall.ENOSPC)
	assert.Empty(t, archived(), "nothing archived while the disk is full")
	full.Store(false)

	second := checkpointOf(3, 20, "three")
	require.NoError(t, write(second))
	assert.Equal(t, []string{"one", "two", "three"}, archived(), "the backlog goes first, in order")
	assert.Equal(t, uint64(20), savedSeq())

	require.NoError(t, write(first), "the overtaken checkpoint, tried again")
	assert.Equal(t, []string{"one", "two", "three"}, archived(), "nothing is archived twice")
	assert.Equal(t, uint64(20), savedSeq(), "state.json does not go back to the older checkpoint")

	require.NoError(t, write(checkpointOf(4, 30, "four")))
	assert.Equal(t, []string{"one", "two", "three", "four"}, archived())
	assert.Equal(t, uint64(30), savedSeq())
}
