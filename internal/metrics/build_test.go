package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/observe"
)

func TestBuildInfo(t *testing.T) {
	m := New(Options{PerBeing: true})
	m.SetBuild(Build{Version: "(devel)", Revision: "76d4ea6", GoVersion: "go1.26.0"})
	want := `
# HELP singularity_build_info The binary's version, VCS revision and Go version; always 1.
# TYPE singularity_build_info gauge
singularity_build_info{go_version="go1.26.0",revision="76d4ea6",version="(devel)"} 1
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "singularity_build_info"))
}

// TestLasRestartsFromZero: a being's restart counter is exported at 0 as
// soon as its Las starts, with and without the being label, and counts
// from there.
func TestLasRestartsFromZero(t *testing.T) {
	ada := observe.Being{Name: "Ada", ID: "agent-ada", AgentID: "agent-ada"}
	bo := observe.Being{Name: "Bo", ID: "0123456789", AgentID: "agent-ada"}
	m := New(Options{PerBeing: true})
	m.LasStarted(ada, "las")
	m.LasStarted(bo, "las")
	m.LasRestarted(bo, "las")
	m.LasStarted(bo, "las") // a being restarted by its parent starts its Las again
	want := `
# HELP singularity_las_restarts_total Restarts of a being's MCP servers.
# TYPE singularity_las_restarts_total counter
singularity_las_restarts_total{being="Ada-agent-ad",server="las"} 0
singularity_las_restarts_total{being="Bo-01234567",server="las"} 1
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "singularity_las_restarts_total"))

	m = New(Options{})
	m.LasStarted(ada, "las")
	want = `
# HELP singularity_las_restarts_total Restarts of a being's MCP servers.
# TYPE singularity_las_restarts_total counter
singularity_las_restarts_total{server="las"} 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "singularity_las_restarts_total"))
}

// TestMemberLabel: a member of a family across processes labels every
// series it serves with its name, the process collectors and the build
// info too; a single process adds no such label.
func TestMemberLabel(t *testing.T) {
	for _, member := range []string{"m1", ""} {
		m := New(Options{PerBeing: true, Process: true, Member: member})
		m.SetBuild(Build{Version: "(devel)", Revision: "r", GoVersion: "go"})
		m.LasRestarted(observe.Being{Name: "Ada", ID: "agent-ada", AgentID: "agent-ada"}, "las")
		m.DurableWrite(time.Millisecond)
		families, err := m.Registry().Gather()
		require.NoError(t, err)
		require.NotEmpty(t, families)
		for _, f := range families {
			for _, metric := range f.GetMetric() {
				got := ""
				for _, l := range metric.GetLabel() {
					if l.GetName() == "member" {
						got = l.GetValue()
					}
				}
				require.Equal(t, member, got, "%s", f.GetName())
			}
		}
	}
}
