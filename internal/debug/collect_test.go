package debug

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/debug/describe"
	"github.com/wisent/singularity/test/debugtest"
)

// familyJSON is the reference tree of debugtest.Family as served.
const familyJSON = `{
  "pid": "family", "kind": "family", "name": "family", "status": "running",
  "children": [
    {"pid": "family/brama", "kind": "brama", "name": "brama", "status": "running",
     "completed": 42, "errors": {"indeterminate": 1, "permanent": 0, "transient": 2}, "in_flight": 1,
     "children": []},
    {"pid": "family/being-ada", "kind": "being", "name": "Ada", "status": "running",
     "balance": "9.75", "current_model": "test-model", "cycle": 3, "earned": "0.25", "last_action": "finance__finance_propose",
     "children": [
       {"pid": "family/being-ada/ledger", "kind": "ledger", "name": "ledger", "status": "running",
        "earned": "0.25", "remaining": "9.75", "spent": "0.5", "children": []},
       {"pid": "family/being-ada/las", "kind": "las", "name": "las", "status": "running",
        "last_restart_reason": "exit status 1", "process_id": 4242, "restarts": 1, "tool_count": 12, "children": []},
       {"pid": "family/being-ada/being-bo", "kind": "being", "name": "Bo", "status": "running",
        "balance": "10", "current_model": "test-model", "cycle": 1, "earned": "0", "last_action": "",
        "children": [
          {"pid": "family/being-ada/being-bo/ledger", "kind": "ledger", "name": "ledger", "status": "running",
           "earned": "0", "remaining": "10", "spent": "0", "children": []},
          {"pid": "family/being-ada/being-bo/las", "kind": "las", "name": "las", "status": "running",
           "last_restart_reason": "exit status 1", "process_id": 4343, "restarts": 1, "tool_count": 12, "children": []}
        ]}
     ]}
  ]
}`

// familyText is the same tree as indented text.
const familyText = `family "family" running
  brama "brama" running completed=42 errors.indeterminate=1 errors.permanent=0 errors.transient=2 in_flight=1
  being "Ada" running balance=9.75 current_model=test-model cycle=3 earned=0.25 last_action=finance__finance_propose
    ledger "ledger" running earned=0.25 remaining=9.75 spent=0.5
    las "las" running last_restart_reason="exit status 1" process_id=4242 restarts=1 tool_count=12
    being "Bo" running balance=10 current_model=test-model cycle=1 earned=0 last_action=""
      ledger "ledger" running earned=0 remaining=10 spent=0
      las "las" running last_restart_reason="exit status 1" process_id=4343 restarts=1 tool_count=12
`

func compact(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, []byte(s)))
	return b.String()
}

func TestCollectFamilyTree(t *testing.T) {
	system, pid := spawnTree(t, debugtest.Family())
	tree := Collect(testContext(t), system.Root, pid, testWait)

	raw, err := json.Marshal(tree)
	require.NoError(t, err)
	assert.Equal(t, compact(t, familyJSON), string(raw), "byte-exact, keys in order")

	var text strings.Builder
	require.NoError(t, tree.WriteText(&text))
	assert.Equal(t, familyText, text.String())
}

func TestCollectUnresponsiveWithinDeadline(t *testing.T) {
	spec := debugtest.Family()
	spec.Children = append(spec.Children, debugtest.Spec{
		ID: "stuck", Silent: true,
		Description: describe.Description{Kind: "brama", Name: "never told"},
	})
	system, pid := spawnTree(t, spec)

	const deadline = 300 * time.Millisecond
	// The test's own bound: generous against a slow machine, far below
	// what a hanging collection would take.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan Node, 1)
	start := time.Now()
	go func() { done <- Collect(context.Background(), system.Root, pid, deadline) }()

	var tree Node
	select {
	case tree = <-done:
	case <-ctx.Done():
		t.Fatal("Collect did not return although one actor never answers")
	}
	elapsed := time.Since(start)
	assert.Less(t, elapsed, deadline+2*time.Second, "returns at the deadline, not later")
	assert.GreaterOrEqual(t, elapsed, deadline, "waits for the silent actor until the deadline")

	require.Len(t, tree.Children, 3)
	assert.Equal(t, Node{PID: "family/stuck", Status: StatusUnresponsive, Children: []Node{}}, tree.Children[2])
	assert.Equal(t, "running", tree.Children[0].Status, "siblings are unaffected")
	assert.Equal(t, "Bo", tree.Children[1].Children[2].Name)

	raw, err := json.Marshal(tree.Children[2])
	require.NoError(t, err)
	assert.JSONEq(t, `{"pid":"family/stuck","kind":"","name":"","status":"unresponsive","children":[]}`, string(raw))

	var text strings.Builder
	require.NoError(t, tree.Children[2].WriteText(&text))
	assert.Equal(t, "? \"\" unresponsive pid=family/stuck\n", text.String())
}

func TestCollectStoppedActor(t *testing.T) {
	system, pid := spawnTree(t, debugtest.Family())
	// A first walk proves the whole tree is up before one actor is stopped.
	require.Equal(t, "running", Collect(testContext(t), system.Root, pid, testWait).Children[1].Children[2].Children[1].Status)
	dead := debugtest.PID(system, "family/being-ada/being-bo/las")
	require.NoError(t, system.Root.StopFuture(dead).Wait())

	// A stopped actor answers through the dead-letter process at once, so
	// the walk finishes long before this deadline.
	const deadline = 5 * time.Second
	start := time.Now()
	tree := Collect(testContext(t), system.Root, pid, deadline)
	assert.Less(t, time.Since(start), deadline)

	bo := tree.Children[1].Children[2]
	require.Equal(t, "Bo", bo.Name)
	require.Len(t, bo.Children, 2)
	assert.Equal(t, Node{PID: "family/being-ada/being-bo/las", Status: StatusUnresponsive, Children: []Node{}}, bo.Children[1])
	assert.Equal(t, "running", bo.Children[0].Status)
}

func TestCollectStoppedRoot(t *testing.T) {
	system, pid := spawnTree(t, debugtest.Family())
	require.NoError(t, system.Root.StopFuture(pid).Wait())
	tree := Collect(testContext(t), system.Root, pid, testWait)
	assert.Equal(t, Node{PID: "family", Status: StatusUnresponsive, Children: []Node{}}, tree)
}

func TestCollectNilPID(t *testing.T) {
	system := quietSystem(t)
	tree := Collect(testContext(t), system.Root, nil, time.Second)
	assert.Equal(t, Node{Status: StatusUnresponsive, Children: []Node{}}, tree)
}

func TestCollectCancelledContext(t *testing.T) {
	system, pid := spawnTree(t, debugtest.Family())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tree := Collect(ctx, system.Root, pid, testWait)
	assert.Equal(t, StatusUnresponsive, tree.Status)
}

// selfLister lists itself (and a pointer description) as its children: a
// describing bug the walk must survive.
type selfLister struct{}

func (selfLister) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(describe.Request); ok {
		ctx.Respond(&describe.Description{Kind: "being", Name: "loop", Status: "running",
			Children: []*actor.PID{ctx.Self(), ctx.Self()}})
	}
}

func TestCollectRepeatedPID(t *testing.T) {
	system := quietSystem(t)
	pid, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return selfLister{} }), "loop")
	require.NoError(t, err)
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })

	tree := Collect(testContext(t), system.Root, pid, testWait)
	repeated := Node{PID: "loop", Status: StatusRepeated, Children: []Node{}}
	assert.Equal(t, Node{PID: "loop", Kind: "being", Name: "loop", Status: "running",
		Figures: map[string]any{}, Children: []Node{repeated, repeated}}, tree)
}

func TestCollectRedactsFigures(t *testing.T) {
	const secret = "hunter2-in-the-environment"
	t.Setenv("DEBUG_TEST_API_KEY", secret)
	spec := debugtest.Spec{
		ID: "leaky",
		Description: describe.Description{Kind: "being", Name: "Eve", Status: "running", Figures: map[string]any{
			"api_token":           "tok-123456",
			"Session-Cookie":      "c=1",
			"brama hmac secret":   "s",
			"credential_path":     "creds",
			"cycle":               7,
			"name":                "shadowing the node's own name",
			"children":            []int{1},
			"errors":              map[string]any{"transient": 1, "refresh_token": "r", "nested": map[string]any{"password": "p", "ok": true}},
			"last_restart_reason": "exec: /run/secrets/brama: permission denied",
			"note":                "the key is " + secret,
			"pem":                 "-----begin private key-----abc",
			"tags":                []any{"fine", "/etc/passwd"},
			"ratio":               0.5,
		}},
	}
	system, pid := spawnTree(t, spec)
	tree := Collect(testContext(t), system.Root, pid, testWait)

	raw, err := json.Marshal(tree)
	require.NoError(t, err)
	assert.JSONEq(t, `{"pid":"leaky","kind":"being","name":"Eve","status":"running",
		"cycle":7,
		"errors":{"transient":1,"nested":{"ok":true}},
		"last_restart_reason":"(redacted)",
		"note":"(redacted)",
		"pem":"(redacted)",
		"ratio":0.5,
		"tags":["fine","(redacted)"],
		"children":[]}`, string(raw))
	for _, leak := range []string{"api_token", "tok-123456", "cookie", "Cookie", "secret", "credential", "refresh_token", "password", secret, "/run/secrets", "/etc/passwd", "shadowing"} {
		assert.NotContains(t, string(raw), leak)
	}
	var text strings.Builder
	require.NoError(t, tree.WriteText(&text))
	assert.NotContains(t, text.String(), "api_token")
	assert.NotContains(t, text.String(), secret)
}

func TestCollectRedactsNames(t *testing.T) {
	spec := debugtest.Spec{ID: "odd", Description: describe.Description{
		Kind: "las", Name: "/home/me/.ssh/id_ed25519", Status: "failed: read /run/key"}}
	system, pid := spawnTree(t, spec)
	tree := Collect(testContext(t), system.Root, pid, testWait)
	assert.Equal(t, Node{PID: "odd", Kind: "las", Name: Redacted, Status: Redacted,
		Figures: map[string]any{}, Children: []Node{}}, tree)
}
