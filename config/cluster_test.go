package config

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/supervision/fault"
)

func TestLoadCluster(t *testing.T) {
	host := func() (string, error) { return "box-1", nil }
	valid := ClusterFlags{Etcd: "http://127.0.0.1:2379, https://etcd.example:2379", Family: "family", Bind: "127.0.0.1:0", Lease: "3", Compact: "300"}

	off, err := LoadCluster(ClusterFlags{Etcd: " ", Lease: "nonsense"}, host)
	require.NoError(t, err, "without endpoints nothing else is read")
	assert.False(t, off.Enabled)

	c, err := LoadCluster(valid, host)
	require.NoError(t, err)
	assert.Equal(t, Cluster{Enabled: true, Endpoints: []string{"http://127.0.0.1:2379", "https://etcd.example:2379"},
		Family: "family", Member: "box-1", Bind: "127.0.0.1:0", Lease: 3 * time.Second, Compact: 5 * time.Minute, Spread: true}, c,
		"the beings are spread over the members by default")

	for placement, spread := range map[string]bool{"being": true, "family": false} {
		flags := valid
		flags.Placement = placement
		c, err = LoadCluster(flags, host)
		require.NoError(t, err)
		assert.Equal(t, spread, c.Spread, "--cluster-placement %s", placement)
	}
	for socket, none := range map[string]bool{"": false, "true": false, "1": false, "false": true, "0": true} {
		flags := valid
		flags.Socket = socket
		c, err = LoadCluster(flags, host)
		require.NoError(t, err)
		assert.Equal(t, none, c.NoSocket, "--cluster-control-socket %q", socket)
	}

	refused := []struct {
		name   string
		change func(*ClusterFlags)
		host   func() (string, error)
		want   string
	}{
		{"endpoint without scheme", func(f *ClusterFlags) { f.Etcd = "127.0.0.1:2379" }, host, `configuration: SINGULARITY_CLUSTER_ETCD "127.0.0.1:2379" is not a list of http(s) URLs`},
		{"empty endpoint in the list", func(f *ClusterFlags) { f.Etcd = "http://a:1,," }, host, `configuration: SINGULARITY_CLUSTER_ETCD "http://a:1,," is not a list of http(s) URLs`},
		{"family with a slash", func(f *ClusterFlags) { f.Family = "a/b" }, host, `configuration: SINGULARITY_CLUSTER_FAMILY "a/b" is not 1 to 128 ASCII letters, digits or any of "-_.:"`},
		{"member with a space", func(f *ClusterFlags) { f.Member = "a b" }, host, `configuration: SINGULARITY_CLUSTER_MEMBER "a b" is not 1 to 128 ASCII letters, digits or any of "-_.:"`},
		{"no host name", func(*ClusterFlags) {}, func() (string, error) { return "", errors.New("uname failed") }, "configuration: SINGULARITY_CLUSTER_MEMBER is unset and the host name cannot be read: uname failed"},
		{"bind without port", func(f *ClusterFlags) { f.Bind = "127.0.0.1" }, host, `configuration: SINGULARITY_CLUSTER_BIND "127.0.0.1" is not host:port`},
		{"lease of zero", func(f *ClusterFlags) { f.Lease = "0" }, host, `configuration: SINGULARITY_CLUSTER_LEASE_SECS "0" is not a whole number of seconds from 1 to 3600`},
		{"fractional lease", func(f *ClusterFlags) { f.Lease = "1.5" }, host, `configuration: SINGULARITY_CLUSTER_LEASE_SECS "1.5" is not a whole number of seconds from 1 to 3600`},
		{"negative compaction period", func(f *ClusterFlags) { f.Compact = "-1" }, host, `configuration: SINGULARITY_CLUSTER_COMPACT_SECS "-1" is not a whole number of seconds from 0 to 86400`},
		{"unknown placement", func(f *ClusterFlags) { f.Placement = "member" }, host, `configuration: SINGULARITY_CLUSTER_PLACEMENT "member" is neither family nor being`},
		{"control socket of words", func(f *ClusterFlags) { f.Socket = "none" }, host, `configuration: SINGULARITY_CLUSTER_CONTROL_SOCKET "none" is neither true nor false`},
		{"compaction period of words", func(f *ClusterFlags) { f.Compact = "5m" }, host, `configuration: SINGULARITY_CLUSTER_COMPACT_SECS "5m" is not a whole number of seconds from 0 to 86400`},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			f := valid
			r.change(&f)
			_, err := LoadCluster(f, r.host)
			require.Error(t, err)
			assert.Equal(t, r.want, err.Error())
			assert.Equal(t, 2, fault.ExitCode(err))
		})
	}
}
