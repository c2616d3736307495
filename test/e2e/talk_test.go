package e2e_test

import (
	"os"
	"path/filepath"
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
// the root sleeps for two minutes: it asks for no completion in the
// whole first minute of it, status shows it sleeping, and `singularity
// say` wakes it within 1 s of its answer, its framing carrying the
// operator's words once.
func TestRelativesTalkThenSleep(t *testing.T) {
	t.Parallel()
	w := standaloneWorld(t)
	w.env["SINGULARITY_FAMILY_TOOLS"] = "1"
	// Bo lives its minute at full pace: a server that kept every request
	// would hold hundreds of megabytes of them, in this test process.
	w.brama = bramatest.Start(t, bramatest.Config{Auth: "none", Models: []string{"local-model"}, DiscardRequests: true})
	w.env["BRAMA_BASE_URL"] = w.brama.URL
	const toBo, toRoot, said = "Message from MyAgent (parent): hello Bo", "Message from Bo (child): hello parent", "Message from the operator: wake up"
	var (
		mu                    sync.Mutex
		spawned, sent, boSent bool
		slept                 bool
		rootAsked             = make(chan []chat.Message, 256)
		boHeard               = make(chan struct{})
		boHeardOnce           sync.Once
		// The most times one prompt held the other's message: the
		// window may drop it later, it must never hold it twice.
		rootMost, boMost int
	)
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		defer mu.Unlock()
		msgs := r.Completion.Messages
		who, _, _ := strings.Cut(strings.TrimPrefix(msgs[0].Content, "You are "), ",")
		toolResult := msgs[len(msgs)-1].Role == chat.RoleTool
		if who == "Bo" {
			boMost = max(boMost, count(msgs, toBo))
			if count(msgs, toBo) > 0 {
				boHeardOnce.Do(func() { close(boHeard) })
			}
			if !boSent && !toolResult {
				boSent = true
				return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("m", "singularity_message_send", `{"to":"parent","text":"hello parent"}`))
			}
			return bramatest.TextReply("resting", bramatest.Usage(10, 5))
		}
		rootMost = max(rootMost, count(msgs, toRoot))
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
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("z", "singularity_self_sleep", `{"seconds":120}`))
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
	case <-time.After(time.Minute): // the stretch of its sleep watched
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
	assert.Equal(t, 1, rootMost, "the root's prompts hold Bo's message once")
	assert.Equal(t, 1, boMost, "Bo's prompts hold the root's message once")
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

// TestMessageAcrossRestarts: the root spawns Bo and sends it a message
// in `once`, which starts no child: the process ends with the message
// in the root's outbox. `run --resume` sends it again and Bo receives
// it. Then the root's files are put back as they were after `once`, as
// if the process had been killed before the root journaled the
// delivery: the next `run --resume` sends it once more, Bo drops the id
// it has and answers, and the root clears its outbox. Bo's journal has
// the message once, and its prompt carries it once.
func TestMessageAcrossRestarts(t *testing.T) {
	t.Parallel()
	w := standaloneWorld(t)
	w.env["SINGULARITY_FAMILY_TOOLS"] = "1"
	const text = "Message from MyAgent (parent): hello across a restart"
	var (
		mu     sync.Mutex
		boLast []chat.Message
		boSeen int // Bo's requests that carry the message
		sent   bool
		framed = make(chan struct{})
	)
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		defer mu.Unlock()
		msgs := r.Completion.Messages
		who, _, _ := strings.Cut(strings.TrimPrefix(msgs[0].Content, "You are "), ",")
		last := msgs[len(msgs)-1]
		switch {
		case who == "Bo":
			boLast = msgs
			if count(msgs, text) > 0 {
				if boSeen++; boSeen == 1 {
					close(framed)
				}
			}
		case !sent && last.Role != chat.RoleTool:
			sent = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5),
				bramatest.Call("s", "singularity_spawn_child", `{"name":"Bo","ticker":"BO","specialty":"books","endowment_usd":"2"}`),
				bramatest.Call("m", "singularity_message_send", `{"to":"Bo","text":"hello across a restart"}`))
		}
		return bramatest.TextReply("resting", bramatest.Usage(10, 5))
	})
	once := w.run("once")
	require.Equal(t, 0, once.code, once.stderr)
	root := w.loadState()
	require.Len(t, root.Outbox, 1, "once delivers nothing: the message waits in the outbox")
	require.Len(t, root.Mind.Children, 1)
	id := root.Outbox[0].ID
	boDir := filepath.Join(w.stateDir, "children", root.Mind.Children[0].ID)
	afterOnce := snapshotFiles(t, w.stateDir)

	received := func(dir string) int {
		events, err := readJournalLoose(testkit.JournalPath(dir))
		require.NoError(t, err)
		return testkit.CountWhere(events, func(e state.Event) bool { return e.Type == state.EventMessageReceived && e.ID == id })
	}
	delivered := func(events []state.Event) bool {
		return testkit.CountWhere(events, func(e state.Event) bool { return e.Type == state.EventMessageDelivered && e.ID == id }) == 1
	}
	for run := 1; run <= 2; run++ {
		p := w.start("run", "--resume")
		w.waitJournal(waitLimit, "the delivery", delivered)
		if run == 2 {
			select {
			case <-framed:
			case <-time.After(waitLimit):
				t.Fatal("Bo's framing never carried the message")
			}
		}
		p.signal(syscall.SIGTERM)
		r := p.wait(waitLimit)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, 1, received(boDir), "run %d: Bo received the message once", run)
		assert.Empty(t, w.loadState().Outbox, "run %d", run)
		if run == 1 {
			// The root's life since once is lost, as a SIGKILL before
			// its delivery step would have lost it.
			restoreFiles(t, w.stateDir, afterOnce)
			require.Len(t, w.loadState().Outbox, 1)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Positive(t, boSeen)
	assert.Equal(t, 1, count(boLast, text), "Bo's prompt carries the message once")
}

// snapshotFiles reads the regular files directly in dir.
func snapshotFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			files[e.Name()] = data
		}
	}
	return files
}

// restoreFiles puts dir's regular files back as files has them: those
// files rewritten, any other regular file removed.
func restoreFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if _, kept := files[e.Name()]; e.Type().IsRegular() && !kept {
			require.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
}
