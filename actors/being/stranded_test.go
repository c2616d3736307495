package being_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// honestBrama answers every completion with a short text and reports the
// tokens a real tokenizer would: a prompt of a token per 4 bytes of its
// request body (real text runs about that), and 100 completion tokens, or
// max_tokens when that is less.
func honestBrama(tb testing.TB) *bramatest.Server {
	srv := newBrama(tb)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		completion := uint64(100)
		if r.Completion != nil && r.Completion.MaxTokens > 0 {
			completion = min(completion, uint64(r.Completion.MaxTokens))
		}
		return bramatest.TextReply("resting", bramatest.Usage(uint64(len(r.Body)+3)/4, completion))
	})
	return srv
}

// strandedLife lives a stable-layout being from 1 USD to exhaustion at 3
// and 15 USD per million prompt and completion tokens, the default
// window, against honestBrama, and returns its final state and journal.
func strandedLife(tb testing.TB) (*state.Being, []state.Event) {
	srv := honestBrama(tb)
	opts := options(tb, being.Run)
	opts.StartingBalance = testkit.USD("1")
	opts.Pricing = budget.Pricing{InputPerMillion: testkit.USD("3"), OutputPerMillion: testkit.USD("15")}
	opts.PromptLayout = prompt.LayoutStable
	h := start(tb, srv, opts)
	stopped := h.stoppedWithin(5 * time.Minute)
	require.Equal(tb, state.StatusExhausted, stopped.Status, "%v", stopped.Err)
	return h.state(), h.journal()
}

// BenchmarkStrandedMoney reports what a life leaves stranded when it is
// exhausted (docs/money.md#no-overdraft): the balance left, in USD and as
// a share of the starting balance, and the cycles it lived.
func BenchmarkStrandedMoney(b *testing.B) {
	for range b.N {
		st, events := strandedLife(b)
		require.NoError(b, testkit.CheckInvariant(st.Budget, events))
		// A figure to read, never money the ledger uses.
		left, err := strconv.ParseFloat(st.Budget.Remaining.String(), 64)
		require.NoError(b, err)
		b.ReportMetric(left, "stranded-USD")
		b.ReportMetric(100*left, "stranded-%")
		b.ReportMetric(float64(st.Cycle), "cycles")
	}
}

// TestStrandedMoney: a being's no-overdraft reservation leaves little
// stranded (docs/money.md#no-overdraft): at exhaustion what is left is at
// most 1 % of its starting balance or less than the reserve of one more
// completion at the smallest max_tokens, and that reserve is tight: within
// a quarter of what such a completion would cost with the last prompt
// the gateway reported. No completion cost more than its reservation,
// and the balance never went below zero.
func TestStrandedMoney(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole life")
	}
	st, events := strandedLife(t)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	require.GreaterOrEqual(t, st.Budget.Remaining.Sign(), 0)
	var lastPrompt uint64
	for _, e := range events {
		require.False(t, e.Type == state.EventWarning && e.Message == being.ExceededReservation, "a completion cost more than its reservation")
		if e.Type == state.EventModelCompleted {
			lastPrompt = e.Usage.PromptTokens
		}
	}
	m := regexp.MustCompile(`^balance (\S+) USD cannot pay the next completion's reserve (\S+) USD$`).FindStringSubmatch(st.StatusReason)
	require.NotNil(t, m, st.StatusReason)
	reserve := testkit.USD(m[2])
	t.Logf("stranded %s of 1 USD after %d cycles; the reserve it could not pay %s", st.Budget.Remaining, st.Cycle, reserve)
	limit := testkit.USD("0.01")
	if reserve.Cmp(limit) > 0 {
		limit = reserve
	}
	require.LessOrEqual(t, st.Budget.Remaining.Cmp(limit), 0)
	// What one more completion of 256 tokens would cost with the last
	// reported prompt: prompt × 3 + 256 × 15, per million.
	cost := testkit.USD(strconv.FormatUint(lastPrompt*3+256*15, 10)).Mul(testkit.USD("0.000001"))
	require.LessOrEqual(t, reserve.Cmp(cost.Mul(testkit.USD("1.25"))), 0, "the reserve %s is within a quarter of a real completion's %s", reserve, cost)
}
