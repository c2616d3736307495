package e2e_test

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/bramatest"
)

// TestGatewayDownWaitIsCappedAt30s: while the gateway answers 503, the
// wait between failing cycles doubles from the interval but never grows
// past 30 s (with a 20 s interval: 20 s, then 30 s rather than 40 s), so
// a being resumes within 30 s of its provider's return.
func TestGatewayDownWaitIsCappedAt30s(t *testing.T) {
	t.Parallel()
	w := standaloneWorld(t)
	asked := make(chan time.Time, 16)
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		asked <- time.Now()
		return bramatest.ErrorReply(http.StatusServiceUnavailable, "provider down")
	})
	w.env["SINGULARITY_CYCLE_INTERVAL_SECS"] = "20"
	w.env["BRAMA_RETRIES"] = "0"
	p := w.start("run")
	var times []time.Time
	for len(times) < 3 {
		select {
		case at := <-asked:
			times = append(times, at)
		case <-time.After(45 * time.Second):
			t.Fatalf("only %d cycles asked the gateway:\n%s", len(times), p.stderr.String())
		}
	}
	p.signal(syscall.SIGTERM)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	first, second := times[1].Sub(times[0]), times[2].Sub(times[1])
	assert.InDelta(t, 20, first.Seconds(), 3, "the first wait is the interval")
	assert.GreaterOrEqual(t, second.Seconds(), 29.0, "the second wait doubles")
	assert.Less(t, second.Seconds(), 35.0, "the second wait is capped at 30 s, not 40 s")
}
