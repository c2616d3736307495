package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExhaustedFamilyEnds: a family whose root runs out of money ends on
// its holder, which records the end, ends with the run summary of the
// family and exits 0; its standby then takes the lock, reads the end and
// exits 0 too, holding nothing.
func TestExhaustedFamilyEnds(t *testing.T) {
	w := newWorld(t)
	w.env["SINGULARITY_STARTING_BALANCE_USD"] = "0.000001"
	holder := w.start("m1")
	holder.await(t, "this member holds the family", waitLimit)
	standby := w.start("m2")
	require.Equal(t, 0, holder.wait(t, waitLimit), "stderr:\n%s", holder.lines.Tail())
	require.Positive(t, holder.lines.Count("the family has ended: its root is exhausted"))
	ended := summaryOf(t, holder)
	require.Contains(t, ended, rootName, "the holder ends with the run summary of the family it held")
	require.Regexp(t, `^exhausted \(balance \S+ USD cannot pay the next completion's reserve \S+ USD\), \d+ cycles, spent \S+, earned \S+, remaining \S+ USD$`, ended[rootName])
	require.Equal(t, 0, standby.wait(t, waitLimit), "stderr:\n%s", standby.lines.Tail())
	require.Positive(t, standby.lines.Count("the family has ended: nothing to hold"))
	require.Zero(t, standby.lines.Count("this member holds the family"))
	beings := w.check(t)
	require.Equal(t, "exhausted", string(beings[rootName].st.Status))
}
