package e2e_test

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestRelativesTalkThenSleep runs a family with --family-tools as a
// process: the root (MyAgent) spawns Bo; each sends the other a message,
// and each message reaches its receiver's framing exactly once. Then
// the root sleeps for 60 s: it asks for no completion in the seconds
// watched, status shows it sleeping, and `singularity say` wakes it
// within 1 s of its answer, its framing carrying the operator's words
// once.
func TestRelativesTalkThenSleep(t *testing.T) {
	t.Parallel()
	w := standaloneWorld(t)
	w.env["SINGULARITY_FAMILY_TOOLS"] = "1"
	const toBo, toRoot, said = "Message from MyAgent (parent): hello Bo", "Message from Bo (child): hello parent", "Message from the operator: wake up"
	var (
		mu                    sync.Mutex
		spawned, sent, boSent bool
		slept                 bool
		rootAsked             = make(chan []chat.Message, 256)
		boHeard               = make(chan struct{})
		boHeardOnce           sync.Once
		rootLast, boLast      []chat.Message
	)
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		defer mu.Unlock()
		msgs := r.Completion.Messages
		who, _, _ := strings.Cut(strings.TrimPrefix(msgs[0].Content, "You are "), ",")
		toolResult := msgs[len(msgs)-1].Role == chat.RoleTool
		if who == "Bo" {
			boLast = msgs
			if count(msgs, toBo) > 0 {
				boHeardOnce.Do(func() { close(boHeard) })
			}
			if !boSent && !toolResult {
				boSent = true
				return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("m", "singularity_message_send", `{"to":"parent","text":"hello parent"}`))
			}
			return bramatest.TextReply("resting", bramatest.Usage(10, 5))
		}
		rootLast = msgs
		rootAsked <- msgs
		switch {
		case toolResult:
			return bramatest.TextReply("noted", bramatest.Usage(10, 5))
		case !spawned:
			spawned = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("s", "singularity_spawn_child", `{"name":"Bo","ticker":"BO","specialty":"books","endowment_usd":"2"}`))
		case !sent:
			sent = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("m", "singularity_message_send", `{"to":"Bo","text":"hello Bo"}`))
		case !slept && count(msgs, toRoot) > 0:
			slept = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("z", "singularity_self_sleep", `{"seconds":60}`))
		}
		return bramatest.TextReply("resting", bramatest.Usage(10, 5))
	})
	p := w.start("run")
	w.waitJournal(waitLimit, "the root's sleep", func(events []state.Event) bool {
		return testkit.CountWhere(events, func(e state.Event) bool { return e.Type == state.EventSlept }) == 1
	})
	select {
	case <-boHeard:
	case <-time.After(waitLimit):
		t.Fatalf("the root's message never reached Bo\n%s", p.stderr.String())
	}
	for len(rootAsked) > 0 {
		<-rootAsked
	}

	status := w.run("status")
	require.Equal(t, 0, status.code, status.stderr)
	assert.Regexp(t, `MyAgent\s+sleeping until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s`, status.stdout)
	select {
	case <-rootAsked:
		t.Fatal("the sleeping root asked for a completion")
	case <-time.After(2 * time.Second): // the stretch of its sleep watched
	}

	say := w.run("say", "--timeout", "10s", "wake up")
	require.Equal(t, 0, say.code, "%s\n%s", say.stderr, p.stderr.String())
	answered := time.Now()
	var woke []chat.Message
	select {
	case woke = <-rootAsked:
	case <-time.After(time.Second):
		t.Fatalf("the root did not wake within 1 s of say\n%s", p.stderr.String())
	}
	assert.Less(t, time.Since(answered), time.Second)
	assert.Equal(t, 1, count(woke, said))

	p.signal(syscall.SIGTERM)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, count(rootLast, toRoot), "the root's prompt holds Bo's message once")
	assert.Equal(t, 1, count(boLast, toBo), "Bo's prompt holds the root's message once")
	assert.Empty(t, w.loadState().Outbox)
}

// count is how many of msgs hold text.
func count(msgs []chat.Message, text string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m.Content, text) {
			n++
		}
	}
	return n
}
