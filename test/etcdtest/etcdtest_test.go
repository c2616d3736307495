package etcdtest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// get reads key within limit.
func get(c *clientv3.Client, key string, limit time.Duration) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return c.Get(ctx, key)
}

// TestServerGoesAndComesBack: what was written survives Stop, Kill and
// Restart; a paused etcd answers nothing until Resume.
func TestServerGoesAndComesBack(t *testing.T) {
	s := Start(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Put(ctx, "k", "v")
	require.NoError(t, err)

	s.Pause()
	_, err = get(c, "k", 300*time.Millisecond)
	assert.Error(t, err, "a paused etcd answers nothing")
	s.Resume()
	got, err := get(c, "k", 10*time.Second)
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)

	s.Stop()
	_, err = get(c, "k", 300*time.Millisecond)
	assert.Error(t, err, "a stopped etcd answers nothing")
	s.Restart()
	got, err = get(c, "k", 10*time.Second)
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, "v", string(got.Kvs[0].Value), "the data directory outlives a restart")

	s.Pause()
	s.Kill()
	s.Restart()
	got, err = get(c, "k", 10*time.Second)
	require.NoError(t, err)
	assert.Len(t, got.Kvs, 1, "a paused etcd can be killed and started again")
}

// TestFreeAddrIsBelowTheEphemeralRange: etcd's ports are taken below the
// kernel's ephemeral range, where no connection's own end can take them
// while a stopped etcd waits for its restart.
func TestFreeAddrIsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low <= firstPort {
		t.Skip("no ephemeral range to stay below on this system")
	}
	for range 20 {
		addr, err := freeAddr()
		require.NoError(t, err)
		_, port, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		n, err := strconv.Atoi(port)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, firstPort)
		require.Less(t, n, low)
	}
}
