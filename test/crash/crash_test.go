// Package crash kills a real writer of a state directory at random moments
// and checks that what it leaves behind always loads and always balances
// (docs/state.md#the-state-directory, docs/money.md#the-invariant,
// docs/differences.md#measured-targets "crash safety").
package crash

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/ledger"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// The child process is this test binary re-executed with childEnv set to
// the state directory (the os/exec pattern).
const (
	childEnv = "SINGULARITY_CRASH_CHILD_DIR"
	seedEnv  = "SINGULARITY_CRASH_CHILD_SEED"
)

var (
	iterations = flag.Int("crash.iterations", 250, "SIGKILL iterations")
	budgetTime = flag.Duration("crash.time", 45*time.Second, "stop early after this long (at least 50 iterations run)")
)

var pricing = ledger.Pricing{
	InputPerMillion:  money.MustParse("2.5"),
	OutputPerMillion: money.MustParse("10.000000007"),
	InstancePerHour:  money.MustParse("0.37"),
}

var identity = testkit.Identity()

const window = 40

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
		if err := child(dir, seed, os.NewFile(3, "progress")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is the writer being killed. It boots (fresh or resumed exactly as
// the being will: open the journal, which repairs a torn line; recover the
// budget from the journal; check the invariant), then loops forever over
// the durable steps of a round, in the being's order:
//
//	debit step:  journal model_completed, journal cost_debited, save state
//	credit step: journal tool_finished, journal revenue_credited, save state
//
// with the conversation window applied (archive appended before the save).
// It writes one byte to progress after each durable write, so the parent
// can pick kill moments among them.
func child(dir string, seed uint64, progress *os.File) error {
	tick := func() error { _, err := progress.Write([]byte{'.'}); return err }
	exists, err := state.Exists(dir)
	if err != nil {
		return err
	}
	store, being, _, err := state.Boot(dir, exists, identity, func() (*state.Being, error) {
		now := state.Now()
		return &state.Being{
			SchemaVersion: state.SchemaVersion, Identity: identity, Status: state.StatusRunning,
			Budget:    state.Budget{Starting: money.MustParse("1000"), Remaining: money.MustParse("1000")},
			StartedAt: now, UpdatedAt: now,
		}, nil
	})
	if err != nil {
		return err
	}
	if err := tick(); err != nil {
		return err
	}
	journal, err := store.OpenJournal(state.Now(), being.Cycle)
	if err != nil {
		return err
	}
	if err := journal.Append(state.Started(state.Now())); err != nil {
		return err
	}
	events, err := state.ReadJournal(store.Path(state.JournalFile))
	if err != nil {
		return err
	}
	recovered, applied, err := ledger.Recover(being.Budget, events, pricing)
	if err != nil {
		return err
	}
	if err := state.CheckInvariant(recovered, events); err != nil {
		return err
	}
	if applied > 0 {
		being.Budget = recovered
		if err := store.Save(being); err != nil {
			return err
		}
	}
	archive, err := store.OpenArchive()
	if err != nil {
		return err
	}
	if err := tick(); err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(seed, being.Cycle))
	save := func() error {
		kept, archived := state.Window(being.Conversation, window)
		if err := archive.Append(archived...); err != nil {
			return err
		}
		being.Conversation = append([]chat.Message(nil), kept...)
		being.UpdatedAt = state.Now()
		return store.Save(being)
	}
	for {
		being.Cycle++
		c := being.Cycle
		being.Conversation = append(being.Conversation,
			chat.Message{Role: chat.RoleUser, Content: state.FramingPrefix + strconv.FormatUint(c, 10) + ". Balance: " + being.Budget.Remaining.String() + " USD."},
			chat.Message{Role: chat.RoleAssistant, Content: "thinking about cycle " + strconv.FormatUint(c, 10)})

		u := chat.Usage{PromptTokens: rng.Uint64N(50_000), CompletionTokens: rng.Uint64N(5_000)}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		d := ledger.ComputeDebit(pricing, u, time.Duration(rng.Int64N(int64(30*time.Second))))
		if err := journal.Append(state.ModelCompleted(state.Now(), c, u)); err != nil {
			return err
		}
		if err := tick(); err != nil {
			return err
		}
		if err := journal.Append(state.CostDebited(state.Now(), c, d.Amount)); err != nil {
			return err
		}
		if err := tick(); err != nil {
			return err
		}
		being.Budget = ledger.ApplyDebit(being.Budget, d)
		if err := save(); err != nil {
			return err
		}
		if err := tick(); err != nil {
			return err
		}

		if c%3 != 0 {
			continue
		}
		result := fmt.Sprintf(`{"sale":{"id":%d,"revenue_usd":"0.%012d7"}}`, c, rng.Uint64N(1e12))
		v, ok := ledger.Revenue("finance__sell", []byte(result))
		if err := journal.Append(state.ToolFinished(state.Now(), c, "finance__sell", "success")); err != nil {
			return err
		}
		if err := tick(); err != nil {
			return err
		}
		if ok {
			if err := journal.Append(state.RevenueCredited(state.Now(), c, v, "finance__sell")); err != nil {
				return err
			}
			if err := tick(); err != nil {
				return err
			}
			if being.Budget, err = ledger.ApplyCredit(being.Budget, v); err != nil {
				return err
			}
		}
		being.Conversation = append(being.Conversation, chat.Message{Role: chat.RoleTool, Name: "finance__sell", Content: result})
		if err := save(); err != nil {
			return err
		}
		if err := tick(); err != nil {
			return err
		}
	}
}

// TestSIGKILLAtRandomMoments kills the child at random durable-write
// boundaries (and, since the kill races with the child, at random points
// between and inside them), many times over the same directory. After
// every kill it asserts, with the child dead:
//
//  1. state.json (if the first boot got that far) parses and passes the
//     schema check;
//  2. the journal opens — a torn last line is cut and a warning journaled —
//     and then every line of it loads;
//  3. the ledger invariant holds between the state and the journal in one
//     of exactly two ways: the state is current (remaining = starting −
//     Σ cost_debited + Σ revenue_credited over the whole journal), or the
//     state lags by exactly the journal's last money event — the step in
//     flight, journaled but not yet saved — so the invariant holds over
//     the journal without that one event;
//  4. recovery as resume performs it (ledger.Recover) applies at most that
//     one event and leaves the invariant exact over the whole journal.
//
// The next child then resumes from that very directory, so recovery is
// exercised too; a child that finds anything wrong exits 3 and fails the
// test.
func TestSIGKILLAtRandomMoments(t *testing.T) {
	if testing.Short() {
		*iterations = min(*iterations, 50)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "being")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	seed := rng.Uint64()
	t.Logf("seed %d", seed)

	var lagging, current, torn, injected, done int
	startAll := time.Now()
	for i := range *iterations {
		if i >= 50 && time.Since(startAll) > *budgetTime {
			break
		}
		done++
		ticks := rng.IntN(25) // durable writes to let through before the kill
		code, stderr := runAndKill(t, exe, dir, seed+uint64(i), ticks)
		require.Equal(t, -1, code, "child exited by itself (code %d): %s", code, stderr)

		exists, err := state.Exists(dir)
		require.NoError(t, err)
		if !exists {
			continue // killed before the first state was created
		}
		being, err := state.Load(dir)
		require.NoError(t, err, "iteration %d: state.json must always parse", i)

		j, err := state.OpenJournal(filepath.Join(dir, state.JournalFile), state.Now(), being.Cycle)
		require.NoError(t, err)
		if j.Repaired() > 0 {
			torn++
		}
		require.NoError(t, j.Close())
		events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
		require.NoError(t, err, "iteration %d: the journal must always load", i)

		if state.CheckInvariant(being.Budget, events) == nil {
			current++
		} else {
			last := lastMoneyEvent(events)
			require.GreaterOrEqual(t, last, 0, "iteration %d: state differs from an empty journal", i)
			require.NoError(t, state.CheckInvariant(being.Budget, events[:last]),
				"iteration %d: state must be current or lag by exactly the last money event", i)
			lagging++
		}
		recovered, applied, err := ledger.Recover(being.Budget, events, pricing)
		require.NoError(t, err)
		require.LessOrEqual(t, applied, 1)
		require.NoError(t, state.CheckInvariant(recovered, events))

		// A SIGKILL rarely lands inside the one write of an append, so
		// every fifth iteration leaves a torn line as a crash inside that
		// write would (or power loss after a partial write-back): the next
		// child must repair it on open.
		if i%5 == 4 {
			line := `{"type":"cost_debited","at":"2026-08-24T22:05:13.100000Z","cycle":` + strconv.FormatUint(being.Cycle+1, 10) + `,"amount":"0.0`
			f, err := os.OpenFile(filepath.Join(dir, state.JournalFile), os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.WriteString(line[:rng.IntN(len(line)-1)+1])
			require.NoError(t, err)
			require.NoError(t, f.Close())
			injected++
		}
	}
	t.Logf("%d kills in %s: state current %d, lagging one event %d; torn lines injected %d (%d found by the parent's check, the rest by the next child)",
		done, time.Since(startAll).Round(time.Millisecond), current, lagging, injected, torn)
	require.Positive(t, current+lagging)
	// Every torn line was replaced by a repair warning by whoever opened
	// the journal next: the child, or the parent's check when the child was
	// killed before it got there. (A kill inside a repair leaves a torn
	// tail again, repaired next time: hence at least, not exactly.)
	require.GreaterOrEqual(t, repairWarnings(t, dir), injected)
	if done >= 100 {
		require.Positive(t, lagging, "kills should sometimes land between a journal append and its save")
	}
}

// repairWarnings counts the torn-line repair warnings in the journal.
// A torn line injected after the last iteration is repaired here first.
func repairWarnings(t *testing.T, dir string) int {
	j, err := state.OpenJournal(filepath.Join(dir, state.JournalFile), state.Now(), 0)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	events, err := state.ReadJournal(filepath.Join(dir, state.JournalFile))
	require.NoError(t, err)
	n := 0
	for _, e := range events {
		if e.Type == state.EventWarning && strings.Contains(e.Message, "torn last line") {
			n++
		}
	}
	return n
}

func lastMoneyEvent(events []state.Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == state.EventCostDebited || events[i].Type == state.EventRevenueCredited {
			return i
		}
	}
	return -1
}

// runAndKill starts the child on dir, lets ticks durable writes through,
// SIGKILLs it and waits. It returns the exit code (-1 when killed by the
// signal) and the child's stderr.
func runAndKill(t *testing.T, exe, dir string, seed uint64, ticks int) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir, seedEnv+"="+strconv.FormatUint(seed, 10))
	cmd.ExtraFiles = []*os.File{w}
	stderr := new(limitedBuffer)
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	require.NoError(t, w.Close())

	require.NoError(t, r.SetReadDeadline(time.Now().Add(30*time.Second)))
	br := bufio.NewReader(r)
	for range ticks {
		if _, err := br.ReadByte(); err != nil {
			break // the child died on its own (EOF); Wait reports why
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stderr.String()
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
