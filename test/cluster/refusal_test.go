package cluster

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusals: a member that cannot or must not join is refused with one
// line and its exit code, and nothing is written: not to the state root
// it named, not to etcd.
func TestRefusals(t *testing.T) {
	w := newWorld(t)
	holder := w.start("m1")
	holder.await(t, "this member holds the family", waitLimit)
	marker, err := os.ReadFile(filepath.Join(w.stateDir, "cluster.json"))
	require.NoError(t, err)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadEtcd := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())
	otherRoot := filepath.Join(t.TempDir(), "state")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenAddr := taken.Addr().String()

	cases := []struct {
		name string
		env  map[string]string
		code int
		line string
	}{
		{"etcd unreachable at boot", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_CLUSTER_ETCD": deadEtcd, "SINGULARITY_STATE_DIR": otherRoot},
			3, "singularity: cluster: etcd is unreachable at boot: cannot reach etcd at [" + deadEtcd + "]"},
		{"two members with one name", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m1"},
			2, "singularity: configuration: member m1: another live member has this name"},
		{"another state root", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_STATE_DIR": otherRoot},
			2, "singularity: configuration: " + otherRoot + " is not the root family fam lives on"},
		{"another family on the root", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_CLUSTER_FAMILY": "other"},
			2, "singularity: configuration: " + filepath.Join(w.stateDir, "cluster.json") + " names family fam, not other: the state root holds another family"},
		{"a link address already taken", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_CLUSTER_BIND": takenAddr},
			3, "singularity: cluster: cannot listen on " + takenAddr + ": "},
		{"a lease of no seconds", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_CLUSTER_LEASE_SECS": "0"},
			2, `singularity: configuration: SINGULARITY_CLUSTER_LEASE_SECS "0" is not a whole number of seconds from 1 to 3600`},
		{"a member that places otherwise", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_CLUSTER_PLACEMENT": "being"},
			2, "singularity: configuration: member m1 places by family and this one by being: a live member places the family's beings otherwise"},
		{"a placement of another kind", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "m2", "SINGULARITY_CLUSTER_PLACEMENT": "machine"},
			2, `singularity: configuration: SINGULARITY_CLUSTER_PLACEMENT "machine" is neither family nor being`},
		{"a member name with a slash", map[string]string{"SINGULARITY_CLUSTER_MEMBER": "a/b"},
			2, `singularity: configuration: SINGULARITY_CLUSTER_MEMBER "a/b" is not 1 to 128 ASCII letters, digits or any of "-_.:"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := w.startWith(c.env)
			code := p.wait(t, waitLimit)
			lines := strings.Split(strings.TrimSpace(p.lines.Tail()), "\n")
			last := lines[len(lines)-1]
			require.Equal(t, c.code, code, "stderr:\n%s", p.lines.Tail())
			require.True(t, strings.HasPrefix(last, c.line), "the refusal %q starts with %q", last, c.line)
			_, err := os.Stat(otherRoot)
			require.ErrorIs(t, err, os.ErrNotExist, "the other root is left as it was: absent")
			now, err := os.ReadFile(filepath.Join(w.stateDir, "cluster.json"))
			require.NoError(t, err)
			require.Equal(t, marker, now)
			require.Equal(t, []string{"m1"}, w.members(t), "etcd holds the first member only")
		})
	}
	require.NoError(t, holder.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 0, holder.wait(t, waitLimit))
}
