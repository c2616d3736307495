package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestTiersFileBlackBox: with SINGULARITY_TIERS_FILE a being whose
// balance is below a tier's bound enters it at its first framing: the
// journal has tier_changed and model_switched before cycle_started, the
// request asks the tier's model with the tier in its framing, and status
// and journal show the tier.
func TestTiersFileBlackBox(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	tiersFile := filepath.Join(w.dir, "tiers.json")
	require.NoError(t, os.WriteFile(tiersFile, []byte(`[{"below_usd": "100", "model": "frugal-model", "max_tool_rounds": 2}]`), 0o600))
	w.env["SINGULARITY_TIERS_FILE"] = tiersFile
	w.brama.SetModels("test-model", "frugal-model")
	w.brama.Enqueue(bramatest.TextReply("Frugal.", bramatest.Usage(100, 10)))
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	events := w.journal()
	assert.Equal(t, []string{state.EventStarted, state.EventTierChanged, state.EventModelSwitched, state.EventCycleStarted}, typesOf(events[:4]))
	assert.Equal(t, 1, events[1].Tier)
	assert.Equal(t, "10", events[1].Amount.String())
	reqs := w.brama.Completions()
	require.Len(t, reqs, 1)
	assert.Equal(t, "frugal-model", reqs[0].Completion.Model)
	msgs := reqs[0].Completion.Messages
	assert.True(t, strings.HasSuffix(msgs[1].Content, " Survival tier 1: the balance is below 100 USD; model frugal-model, at most 2 tool rounds a cycle."), msgs[1].Content)

	status := w.run("status")
	require.Equal(t, 0, status.code, status.stderr)
	assert.Contains(t, status.stdout, "stopped, tier 1")
	js := w.run("status", "--format", "json")
	require.Equal(t, 0, js.code, js.stderr)
	var doc struct {
		Beings []struct {
			Tier int `json:"tier"`
		} `json:"beings"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &doc))
	require.Len(t, doc.Beings, 1)
	assert.Equal(t, 1, doc.Beings[0].Tier)
	journal := w.run("journal")
	require.Equal(t, 0, journal.code, journal.stderr)
	assert.Contains(t, journal.stdout, "tier_changed")
	assert.Contains(t, journal.stdout, "tier=1 remaining=10")
}

func typesOf(events []state.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// writeTiers writes w's tiers file (SINGULARITY_TIERS_FILE) with text.
func (w *world) writeTiers(text string) {
	w.t.Helper()
	path := filepath.Join(w.dir, "tiers.json")
	require.NoError(w.t, os.WriteFile(path, []byte(text), 0o600))
	w.env["SINGULARITY_TIERS_FILE"] = path
}

// TestTierModelNotListedRefused: a tier whose model the gateway's model
// list does not hold is refused by doctor, once and run with one
// sentence, exit 2, before anything starts; a selector is Brama's to
// resolve and passes (docs/money.md#survival-tiers).
func TestTierModelNotListedRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetModels("test-model", "cheap-model")
	w.writeTiers(`[{"below_usd": "5", "model": "task:cheap"}, {"below_usd": "1", "model": "cheap-model"}, {"below_usd": "0.5", "model": "ghost-model"}]`)
	for _, command := range []string{"doctor", "once", "run"} {
		r := w.run(command)
		assert.Equal(t, 2, r.code, "%s: %s", command, r.stderr)
		assert.Equal(t, `singularity: configuration: SINGULARITY_TIERS_FILE: tier 3: model "ghost-model" is not in the gateway's model list`, r.errorLine(), command)
		assert.Empty(t, r.stdout, command)
		_, err := os.Stat(w.stateDir)
		assert.True(t, os.IsNotExist(err), "%s started nothing", command)
	}
	assert.Zero(t, len(w.brama.Completions()), "no completion asked")

	w.brama.SetModels("test-model", "cheap-model", "ghost-model")
	r := w.run("doctor")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"ok":true`)
}

// TestUnservedTierModelFallsBack: a tier switches to a model the gateway
// lists but refuses with 404 (a model not loaded). The cycle fails, the
// journal says so (a warning and model_switched to the base model), and
// the being lives on with the base model: its balance keeps falling
// (docs/brama.md#unserved-models). Before, Brama's 404 failed the being
// and any other gateway's froze the balance in the tier for good.
func TestUnservedTierModelFallsBack(t *testing.T) {
	t.Parallel()
	for _, auth := range []string{"hmac", "none"} {
		t.Run(auth, func(t *testing.T) {
			t.Parallel()
			var w *world
			if auth == "hmac" {
				w = newWorld(t, `{}`)
				w.brama.SetModels("test-model", "ghost-model")
				w.env["BRAMA_MODEL"] = "test-model"
			} else {
				w = newGatewayWorld(t, auth, "test-model", "ghost-model")
			}
			w.writeTiers(`[{"below_usd": "100", "model": "ghost-model"}]`)
			w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
				if r.Completion.Model == "ghost-model" {
					return bramatest.ErrorReply(http.StatusNotFound, "model 'ghost-model' not found, try pulling it first")
				}
				return bramatest.TextReply("Living.", bramatest.Usage(100, 10))
			})
			p := w.start("run")
			w.waitJournal(waitLimit, "three debits", func(events []state.Event) bool {
				return testkit.Count(events, state.EventCostDebited) >= 3
			})
			p.signal(syscall.SIGTERM)
			r := p.wait(waitLimit)
			require.Equal(t, 0, r.code, r.stderr)

			events := w.journal()
			var switched []string
			for _, e := range events {
				if e.Type == state.EventModelSwitched {
					switched = append(switched, e.Model)
				}
			}
			assert.Equal(t, []string{"ghost-model", "test-model"}, switched)
			assert.Contains(t, warnings(events), "model ghost-model is not served: switched to test-model")
			asked := w.brama.AskedModels()
			require.GreaterOrEqual(t, len(asked), 4)
			assert.Equal(t, []string{"ghost-model", "test-model", "test-model", "test-model"}, asked[:4])
			st := w.loadState()
			assert.Equal(t, state.StatusStopped, st.Status)
			assert.Equal(t, 1, st.Tier)
			assert.Equal(t, "test-model", st.Mind.CurrentModel)
			assert.True(t, st.Budget.Remaining.Cmp(st.Budget.Starting) < 0, "the balance moved")
		})
	}
}

// TestResumeReappliesTier: a being stopped in a tier and resumed after
// the tiers file changed lives by the file as it is now: its first
// framing switches to the tier's new model (docs/money.md#survival-tiers).
func TestResumeReappliesTier(t *testing.T) {
	t.Parallel()
	w := newWorld(t, `{}`)
	w.brama.SetModels("test-model", "old-model", "new-model")
	w.brama.SetHandler(textReplies(100, 10))
	w.writeTiers(`[{"below_usd": "100", "model": "old-model"}]`)
	r := w.run("once")
	require.Equal(t, 0, r.code, r.stderr)

	w.writeTiers(`[{"below_usd": "100", "model": "new-model"}]`)
	r = w.run("once", "--resume")
	require.Equal(t, 0, r.code, r.stderr)

	assert.Equal(t, []string{"old-model", "new-model"}, w.brama.AskedModels())
	events := w.journal()
	second := 0
	for i, e := range events {
		if e.Type == state.EventStarted {
			second = i
		}
	}
	assert.Equal(t, []string{state.EventStarted, state.EventModelSwitched, state.EventCycleStarted}, typesOf(events[second:second+3]))
	assert.Equal(t, "new-model", events[second+1].Model)
	assert.Equal(t, "new-model", w.loadState().Mind.CurrentModel)
}
