package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
)

// TestMemberRelay: a relative's message for a being another member runs
// is offered to the other members' control sockets (never this
// member's own), and the answer of the member that runs the receiver
// is the sender's; busy when a member was busy, ended when none runs it
// and its life ended, else not here.
func TestMemberRelay(t *testing.T) {
	root, err := os.MkdirTemp("", "relay") // a short path: a socket's name is bounded
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	var (
		mu  sync.Mutex
		got = map[string][]control.Request{}
	)
	listen := func(member string, answer func(control.Request) control.Reply) {
		srv, err := control.Listen(filepath.Join(root, control.MemberSocket(member)), 5*time.Second, func(_ context.Context, req control.Request) control.Reply {
			mu.Lock()
			got[member] = append(got[member], req)
			mu.Unlock()
			return answer(req)
		})
		require.NoError(t, err)
		t.Cleanup(srv.Close)
	}
	notHere := func(control.Request) control.Reply { return control.Reply{NotHere: true} }
	listen("alpha", notHere)
	listen("beta", func(req control.Request) control.Reply {
		if req.Being == filepath.Join("children", "bo") {
			return control.Reply{Name: "Bo", Key: req.Key, Duplicate: true}
		}
		return control.Reply{NotHere: true}
	})
	listen("gamma", notHere)

	endedDir := filepath.Join(root, "children", "di")
	relay := memberRelay(root, "alpha", func(_ context.Context, dir string) bool { return dir == endedDir })
	msg := messages.MessageRequest{Message: state.InMessage{ID: "m-1", From: "agent", Name: "Ada", Relation: "parent", Text: "hello"}}
	res := relay(filepath.Join(root, "children", "bo"), msg, 5*time.Second)
	assert.Equal(t, messages.MessageResponse{Name: "Bo", Duplicate: true}, res)
	mu.Lock()
	assert.Empty(t, got["alpha"], "a member never asks itself")
	require.NotEmpty(t, got["beta"])
	assert.Equal(t, control.Request{Op: control.OpRelay, Being: filepath.Join("children", "bo"), Key: "m-1", Text: "hello", From: "agent", Name: "Ada", Relation: "parent"}, got["beta"][0])
	mu.Unlock()

	assert.Equal(t, messages.MessageNotHere{}, relay(filepath.Join(root, "children", "cy"), msg, 5*time.Second), "no member runs Cy")
	assert.Equal(t, messages.MessageResponse{Ended: true}, relay(endedDir, msg, 5*time.Second), "no member runs Di, whose life ended")

	listen("delta", func(control.Request) control.Reply { return control.Reply{Busy: true} })
	res = relay(filepath.Join(root, "children", "cy"), msg, 5*time.Second)
	busy, ok := res.(messages.MessageResponse)
	require.True(t, ok, "%T", res)
	assert.ErrorIs(t, busy.Err, control.ErrBusy, "a busy member: the sender asks again soon")
}
