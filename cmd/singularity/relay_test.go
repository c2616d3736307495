package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/memberlink"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/clusterpb"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/etcdtest"
)

// TestMemberRelay: a relative's message for a being another member
// holds goes to that member's link, found by the being's lock and the
// holder's member record in etcd (never to this member itself), and the
// holder's answer is the sender's; busy when the holder was busy, not
// here when the holder has the lock but not the being, ended when no
// member holds it and its life ended, else not here.
func TestMemberRelay(t *testing.T) {
	srv := etcdtest.Start(t)
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	open := func() *fence.Session {
		s, err := fence.Open(fence.Config{Endpoints: srv.Endpoints(), Family: "fam", TTL: 3 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	// Beta's link, on the one actor system both members use here (the
	// race detector's domain: memberlink's remote_test.go crosses the
	// wire).
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	var (
		mu  sync.Mutex
		got []control.Request
	)
	answers := map[string]control.Reply{
		filepath.Join("children", "bo"):  {Name: "Bo", Key: "m-1", Duplicate: true},
		filepath.Join("children", "ed"):  {Busy: true},
		filepath.Join("children", "gus"): {NotHere: true},
	}
	hook := func(_ context.Context, req control.Request) control.Reply {
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		return answers[req.Being]
	}
	shown := func(context.Context, string) *clusterpb.FamilyTree { return &clusterpb.FamilyTree{Member: "beta"} }
	_, err := system.Root.SpawnNamed(memberlink.Props(shown, hook, 0), memberlink.Name)
	require.NoError(t, err)

	alpha, beta := open(), open()
	_, err = member.Join(ctx, alpha, "fam", member.Config{Name: "alpha", Address: "127.0.0.1:1", Root: root})
	require.NoError(t, err)
	_, err = member.Join(ctx, beta, "fam", member.Config{Name: "beta", Address: system.ProcessRegistry.Address, Root: root})
	require.NoError(t, err)
	for _, id := range []string{"bo", "ed", "gus"} {
		_, err := beta.Lock(ctx, id)
		require.NoError(t, err)
	}
	_, err = alpha.Lock(ctx, "fy")
	require.NoError(t, err)

	endedDir := filepath.Join(root, "children", "di")
	relay := memberRelay(root, "alpha", alpha, system, func(_ context.Context, dir string) bool { return dir == endedDir })
	msg := messages.MessageRequest{Message: state.InMessage{ID: "m-1", From: "agent", Name: "Ada", Relation: "parent", Text: "hello"}}
	to := func(id string) any { return relay(filepath.Join(root, "children", id), msg, 5*time.Second) }

	assert.Equal(t, messages.MessageResponse{Name: "Bo", Duplicate: true}, to("bo"), "beta holds Bo")
	mu.Lock()
	require.Len(t, got, 1)
	assert.Equal(t, control.Request{Op: control.OpRelay, Being: filepath.Join("children", "bo"), Key: "m-1", Text: "hello", From: "agent", Name: "Ada", Relation: "parent"}, got[0])
	mu.Unlock()

	busy, ok := to("ed").(messages.MessageResponse)
	require.True(t, ok)
	assert.ErrorIs(t, busy.Err, control.ErrBusy, "a busy holder: the sender asks again soon")
	assert.Equal(t, messages.MessageNotHere{}, to("gus"), "beta holds Gus's lock but does not run it yet")
	assert.Equal(t, messages.MessageNotHere{}, to("fy"), "alpha holds Fy's lock: it never asks itself")
	assert.Equal(t, messages.MessageNotHere{}, to("cy"), "no member holds Cy")
	assert.Equal(t, messages.MessageResponse{Ended: true}, to("di"), "no member holds Di, whose life ended")
	mu.Lock()
	assert.Len(t, got, 3, "beta was asked for Bo, Ed and Gus only")
	mu.Unlock()
}
