package member

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/wire/clusterpb"
	"github.com/wisent/singularity/test/etcdtest"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

func session(t *testing.T, srv *etcdtest.Server, family string) *fence.Session {
	t.Helper()
	s, err := fence.Open(fence.Config{Endpoints: srv.Endpoints(), Family: family, TTL: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// memberKeys lists the member records in etcd, whoever wrote them.
func memberKeys(t *testing.T, c *clientv3.Client, family string) []string {
	t.Helper()
	resp, err := c.Get(ctxFor(t), fence.Root+family+"/member/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

func TestJoin(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.Client(t)
	root := t.TempDir()

	firstSession := session(t, srv, "fam")
	first, err := Join(ctxFor(t), firstSession, "fam", Config{Name: "m1", Address: "127.0.0.1:1", Root: root})
	require.NoError(t, err)
	mark, found, err := readMarker(root)
	require.NoError(t, err)
	require.True(t, found, "the first member marks the root")
	require.Equal(t, "fam", mark.Family)
	require.Equal(t, mark.RootID, first.Info().RootID)

	secondSession := session(t, srv, "fam")
	second, err := Join(ctxFor(t), secondSession, "fam", Config{Name: "m2", Address: "127.0.0.1:2", Root: root})
	require.NoError(t, err)
	live, err := second.Members(ctxFor(t))
	require.NoError(t, err)
	require.Equal(t, []Info{
		{Name: "m1", Address: "127.0.0.1:1", Protocol: clusterpb.ProtocolVersion, RootID: mark.RootID, Lease: fmt.Sprintf("%x", firstSession.Lease())},
		{Name: "m2", Address: "127.0.0.1:2", Protocol: clusterpb.ProtocolVersion, RootID: mark.RootID, Lease: fmt.Sprintf("%x", secondSession.Lease())},
	}, live)

	t.Run("a name another live member has", func(t *testing.T) {
		_, err := Join(ctxFor(t), session(t, srv, "fam"), "fam", Config{Name: "m1", Root: root})
		require.ErrorIs(t, err, ErrNameTaken)
		require.Equal(t, "member m1: another live member has this name", err.Error())
	})

	t.Run("another state root", func(t *testing.T) {
		other := t.TempDir()
		_, err := Join(ctxFor(t), session(t, srv, "fam"), "fam", Config{Name: "m3", Root: other})
		require.ErrorIs(t, err, ErrAnotherRoot)
		entries, err := os.ReadDir(other)
		require.NoError(t, err)
		require.Empty(t, entries, "a refused member writes nothing to its root")
	})

	t.Run("a root holding another family", func(t *testing.T) {
		_, err := Join(ctxFor(t), session(t, srv, "other"), "other", Config{Name: "m3", Root: root})
		require.ErrorIs(t, err, ErrAnotherFamily)
		require.Empty(t, memberKeys(t, etcd, "other"))
		resp, err := etcd.Get(ctxFor(t), fence.Root+"other/family")
		require.NoError(t, err)
		require.Empty(t, resp.Kvs, "a refused first member writes no family record")
	})

	t.Run("another protocol version", func(t *testing.T) {
		_, err := Join(ctxFor(t), session(t, srv, "fam"), "fam", Config{Name: "m3", Root: root, Protocol: clusterpb.ProtocolVersion + 1})
		require.ErrorIs(t, err, ErrProtocol)
		require.Equal(t, []string{fence.Root + "fam/member/m1", fence.Root + "fam/member/m2"}, memberKeys(t, etcd, "fam"))
	})

	t.Run("another placement", func(t *testing.T) {
		_, err := Join(ctxFor(t), session(t, srv, "fam"), "fam", Config{Name: "m3", Root: root, Placement: "being"})
		require.ErrorIs(t, err, ErrPlacement)
		require.Equal(t, "member m1 places by family and this one by being: a live member places the family's beings otherwise", err.Error())
		require.Equal(t, []string{fence.Root + "fam/member/m1", fence.Root + "fam/member/m2"}, memberKeys(t, etcd, "fam"))
	})

	t.Run("a name that is no identifier", func(t *testing.T) {
		_, err := Join(ctxFor(t), session(t, srv, "fam"), "fam", Config{Name: "a/b", Root: root})
		require.EqualError(t, err, `the member name "a/b" is not 1 to 128 ASCII letters, digits or any of "-_.:"`)
	})

	t.Run("a name is free again once its member is gone", func(t *testing.T) {
		require.NoError(t, second.Leave(ctxFor(t)))
		again, err := Join(ctxFor(t), session(t, srv, "fam"), "fam", Config{Name: "m2", Root: root})
		require.NoError(t, err)
		require.Equal(t, mark.RootID, again.Info().RootID)
	})

	t.Run("a member's record ends with its lease", func(t *testing.T) {
		require.NoError(t, secondSession.Close()) // m2 left and rejoined on another session
		s := session(t, srv, "fam")
		m, err := Join(ctxFor(t), s, "fam", Config{Name: "m4", Root: root})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.NotContains(t, memberKeys(t, etcd, "fam"), fence.Root+"fam/member/"+m.Info().Name)
	})
}

// Two first members racing on one fresh root agree on one root id.
func TestFirstMembersRace(t *testing.T) {
	srv := etcdtest.Start(t)
	root := t.TempDir()
	type result struct {
		m   *Member
		err error
	}
	results := make(chan result, 2)
	for _, name := range []string{"a", "b"} {
		s := session(t, srv, "fam")
		go func() {
			m, err := Join(ctxFor(t), s, "fam", Config{Name: name, Root: root})
			results <- result{m, err}
		}()
	}
	r1, r2 := <-results, <-results
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)
	require.Equal(t, r1.m.Info().RootID, r2.m.Info().RootID)
	matches, err := filepath.Glob(filepath.Join(root, ".cluster-*"))
	require.NoError(t, err)
	require.Empty(t, matches, "no temporary file is left")
}

// TestJoinRaceOfProtocols: members of two protocol versions join one
// family at the same instant, round after round. However the joins
// interleave, the members that got in all speak one protocol, every
// other member was refused with ErrProtocol, and a refused member left
// no record behind.
func TestJoinRaceOfProtocols(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.Client(t)
	const rounds, each = 12, 3
	for round := range rounds {
		family := fmt.Sprintf("race%d", round)
		root := t.TempDir()
		// The family exists before the race, as it does once its first
		// member joined; the racers then all judge the same root.
		_, err := Join(ctxFor(t), session(t, srv, family), family, Config{Name: "first", Root: root, Protocol: 7})
		require.NoError(t, err)
		require.NoError(t, memberLeave(t, etcd, family, "first"))

		start := make(chan struct{})
		type result struct {
			protocol uint32
			err      error
		}
		results := make(chan result, 2*each)
		for i := range 2 * each {
			protocol := uint32(7 + i%2)
			s := session(t, srv, family)
			go func() {
				<-start
				_, err := Join(context.Background(), s, family, Config{Name: fmt.Sprintf("m%d", i), Root: root, Protocol: protocol})
				results <- result{protocol, err}
			}()
		}
		close(start)
		in := map[uint32]int{}
		for range 2 * each {
			r := <-results
			if r.err != nil {
				require.ErrorIs(t, r.err, ErrProtocol, "round %d", round)
				continue
			}
			in[r.protocol]++
		}
		require.Len(t, in, 1, "round %d: the members that got in speak one protocol: %v", round, in)
		for _, n := range in {
			require.Len(t, memberKeys(t, etcd, family), n, "round %d: only they have records", round)
		}
	}
}

// memberLeave deletes a member's record, as its Leave does.
func memberLeave(t *testing.T, c *clientv3.Client, family, name string) error {
	t.Helper()
	_, err := c.Delete(ctxFor(t), fence.Root+family+"/member/"+name)
	return err
}

// The holder is the member whose lock key is oldest; a waiting member
// is not the holder until the lock passes to it.
func TestHolder(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := srv.Client(t)
	root := t.TempDir()
	reader := session(t, srv, "fam")

	_, ok, err := Holder(ctxFor(t), reader, RootBeing)
	require.NoError(t, err)
	require.False(t, ok, "nobody holds a lock no member took")

	s1, s2 := session(t, srv, "fam"), session(t, srv, "fam")
	_, err = Join(ctxFor(t), s1, "fam", Config{Name: "m1", Address: "127.0.0.1:1", Root: root})
	require.NoError(t, err)
	_, err = Join(ctxFor(t), s2, "fam", Config{Name: "m2", Address: "127.0.0.1:2", Root: root})
	require.NoError(t, err)

	first, err := s1.Lock(ctxFor(t), RootBeing)
	require.NoError(t, err)
	second := make(chan *fence.Lock, 1)
	go func() {
		l, err := s2.Lock(context.Background(), RootBeing)
		if err != nil {
			l = nil
		}
		second <- l
	}()
	waiting := func() bool {
		resp, err := etcd.Get(ctxFor(t), fence.Root+"fam/lock/"+RootBeing+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		require.NoError(t, err)
		return resp.Count == 2
	}
	require.Eventually(t, waiting, 10*time.Second, 10*time.Millisecond, "m2 waits for the lock")

	info, ok, err := Holder(ctxFor(t), reader, RootBeing)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "m1", info.Name)
	require.Equal(t, "127.0.0.1:1", info.Address)

	require.NoError(t, first.Unlock(ctxFor(t)))
	select {
	case l := <-second:
		require.NotNil(t, l, "m2's wait for the lock failed")
	case <-time.After(10 * time.Second):
		t.Fatal("the lock did not pass to m2")
	}
	info, ok, err = Holder(ctxFor(t), reader, RootBeing)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "m2", info.Name)
}
