package being_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// whose is the being a completion request is for: the name its system
// prompt begins with ("You are Bo, …").
func whose(r *bramatest.Request) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(r.Completion.Messages[0].Content, "You are "), ",")
	return name
}

// lastOf is the newest completion request of the being named name.
func lastOf(srv *bramatest.Server, name string) *bramatest.Request {
	var last *bramatest.Request
	for _, r := range srv.Completions() {
		if whose(&r) == name {
			last = &r
		}
	}
	return last
}

// carrying counts the messages of r that hold text.
func carrying(r *bramatest.Request, text string) int {
	n := 0
	for _, m := range r.Completion.Messages {
		if strings.Contains(m.Content, text) {
			n++
		}
	}
	return n
}

// toolAnswered says whether the last message of r is a tool result.
func toolAnswered(r *bramatest.Request) bool { return lastMessage(r).Role == chat.RoleTool }

// await waits for done to be closed, failing with what.
func await(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal(what)
	}
}

// familyOptions are a root's options with the family tools.
func familyOptions(t *testing.T) being.Options {
	opts := options(t, being.Run)
	opts.FamilyTools = true
	opts.CycleInterval = 20 * time.Millisecond
	return opts
}

func eventsOf(events []state.Event, kind, id string) int {
	return testkit.CountWhere(events, func(e state.Event) bool { return e.Type == kind && (id == "" || e.ID == id) })
}

// TestMessagesBetweenParentAndChild: the root spawns Bo and sends it a
// message, and Bo sends one to its parent. Each receiver's framing
// carries the other's message exactly once, each sender's journal has
// it sent and then delivered, each receiver's has it received once,
// and no outbox keeps anything.
func TestMessagesBetweenParentAndChild(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	var (
		mu                        sync.Mutex
		spawned, adaSent, boSent  bool
		adaHeard, boHeard         = make(chan struct{}), make(chan struct{})
		adaHeardOnce, boHeardOnce sync.Once
	)
	const toBo, toAda = "Message from Ada (parent): hello Bo", "Message from Bo (child): hello Ada"
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		defer mu.Unlock()
		who := whose(r)
		switch {
		case who == "Ada" && carrying(r, toAda) > 0:
			adaHeardOnce.Do(func() { close(adaHeard) })
		case who == "Bo" && carrying(r, toBo) > 0:
			boHeardOnce.Do(func() { close(boHeard) })
		}
		if toolAnswered(r) {
			return bramatest.TextReply("noted", bramatest.Usage(10, 5))
		}
		switch {
		case who == "Ada" && !spawned:
			spawned = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("s", builtin.SpawnChild, `{"name":"Bo","ticker":"BO","specialty":"books","endowment_usd":"2"}`))
		case who == "Ada" && !adaSent:
			adaSent = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("m", builtin.MessageSend, `{"to":"Bo","text":"hello Bo"}`))
		case who == "Bo" && !boSent:
			boSent = true
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("m", builtin.MessageSend, `{"to":"parent","text":"hello Ada"}`))
		}
		return bramatest.TextReply("resting", bramatest.Usage(10, 5))
	})
	opts := familyOptions(t)
	h := start(t, srv, opts)
	await(t, adaHeard, "Bo's message never reached Ada's framing")
	await(t, boHeard, "Ada's message never reached Bo's framing")
	h.shutdown()

	assert.Equal(t, 1, carrying(lastOf(srv, "Ada"), toAda), "Ada's prompt holds Bo's message once")
	assert.Equal(t, 1, carrying(lastOf(srv, "Bo"), toBo), "Bo's prompt holds Ada's message once")

	ada := h.state()
	require.Len(t, ada.Mind.Children, 1)
	boDir := filepath.Join(opts.StateDir, "children", ada.Mind.Children[0].ID)
	bo, err := state.Load(boDir)
	require.NoError(t, err)
	for _, pair := range []struct {
		sender, receiver       *state.Being
		senderDir, receiverDir string
		receiverID             string
	}{
		{ada, bo, opts.StateDir, boDir, ada.Mind.Children[0].ID},
		{bo, ada, boDir, opts.StateDir, opts.Identity.AgentID},
	} {
		sent := testkit.Journal(t, pair.senderDir)
		require.Equal(t, 1, eventsOf(sent, state.EventMessageSent, ""), pair.sender.Identity.Name)
		var id string
		for _, e := range sent {
			if e.Type == state.EventMessageSent {
				id = e.ID
				assert.Equal(t, pair.receiverID, e.To)
			}
		}
		assert.Equal(t, 1, eventsOf(sent, state.EventMessageDelivered, id), "%s's message delivered once", pair.sender.Identity.Name)
		assert.Empty(t, pair.sender.Outbox)
		received := testkit.Journal(t, pair.receiverDir)
		assert.Equal(t, 1, eventsOf(received, state.EventMessageReceived, id), "%s received it once", pair.receiver.Identity.Name)
		assert.Contains(t, pair.receiver.Received, id)
	}
}

// craftFamily writes Ada's state with the child Bo, as a life of theirs
// left them: Bo's state is boStatus, and each one's journal holds the
// given events past its first checkpoint.
func craftFamily(t *testing.T, opts being.Options, boStatus string, adaEvents, boEvents []state.Event) (boID, boDir string) {
	t.Helper()
	boID = "0b0e0000-0000-4000-8000-0000000000b0"
	rec := state.Child{ID: boID, Name: "Bo", Ticker: "BO", Specialty: "books", StateDir: state.ChildRecordDir(boID), Status: state.StatusRunning, CreatedAt: state.Now()}
	ada := being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Now())
	ada.Mind.Children = []state.Child{rec}
	ada.Status, ada.Cycle = state.StatusStopped, 1
	write := func(dir string, id state.Identity, st *state.Being, events []state.Event) {
		store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
		require.NoError(t, err)
		if len(events) == 0 {
			return
		}
		j, err := store.OpenJournal(state.Now(), st.Cycle)
		require.NoError(t, err)
		_, err = j.AppendStep(events)
		require.NoError(t, err)
		require.NoError(t, j.Close())
	}
	write(opts.StateDir, opts.Identity, ada, adaEvents)
	boDir = filepath.Join(opts.StateDir, "children", boID)
	require.NoError(t, state.MakeDir(filepath.Join(opts.StateDir, "children")))
	boIdentity := opts.Identity
	boIdentity.Name, boIdentity.Ticker, boIdentity.Specialty = "Bo", "BO", "books"
	bo := being.NewState(boIdentity, testkit.USD("2"), opts.Model, state.Now())
	bo.Status, bo.Cycle = boStatus, 1
	write(boDir, boIdentity, bo, boEvents)
	return boID, boDir
}

// TestOutboxSentAgainAfterARestart: a stop came between sending and
// delivery, as a SIGKILL leaves it: Ada's journal has two messages to Bo
// sent and not delivered, of which Bo had already received the first
// (its answer was lost), and Bo's has one to Ada sent and not
// delivered. At the next start both send their outboxes again: Bo drops
// the id it has but answers, so every message is received exactly once
// and framed once, and both outboxes empty.
func TestOutboxSentAgainAfterARestart(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	var (
		mu                sync.Mutex
		adaHeard, boHeard = make(chan struct{}), make(chan struct{})
		adaOnce, boOnce   sync.Once
	)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if whose(r) == "Ada" && carrying(r, "Message from Bo (child): hello 3") > 0 {
			adaOnce.Do(func() { close(adaHeard) })
		}
		if whose(r) == "Bo" && carrying(r, "Message from Ada (parent): hello 2") > 0 && carrying(r, "hello 1") > 0 {
			boOnce.Do(func() { close(boHeard) })
		}
		return bramatest.TextReply("resting", bramatest.Usage(10, 5))
	})
	opts := familyOptions(t)
	at := state.Now()
	boID := "0b0e0000-0000-4000-8000-0000000000b0"
	m1 := state.OutMessage{ID: "m-1", To: boID, Text: "hello 1"}
	m2 := state.OutMessage{ID: "m-2", To: boID, Text: "hello 2"}
	m3 := state.OutMessage{ID: "m-3", To: opts.Identity.AgentID, Text: "hello 3"}
	_, boDir := craftFamily(t, opts, state.StatusStopped,
		[]state.Event{state.MessageSent(at, 1, m1), state.MessageSent(at, 1, m2)},
		[]state.Event{
			state.MessageReceived(at, 1, state.InMessage{ID: m1.ID, From: opts.Identity.AgentID, Name: "Ada", Relation: "parent", Text: m1.Text}),
			state.MessageSent(at, 1, m3),
		})

	h := resume(t, srv, opts)
	await(t, adaHeard, "Bo's resent message never reached Ada")
	await(t, boHeard, "Ada's resent messages never reached Bo")
	h.shutdown()

	assert.Equal(t, 1, carrying(lastOf(srv, "Bo"), "Message from Ada (parent): hello 1"))
	assert.Equal(t, 1, carrying(lastOf(srv, "Bo"), "Message from Ada (parent): hello 2"))
	assert.Equal(t, 1, carrying(lastOf(srv, "Ada"), "Message from Bo (child): hello 3"))
	adaJournal, boJournal := h.journal(), testkit.Journal(t, boDir)
	assert.Equal(t, 1, eventsOf(boJournal, state.EventMessageReceived, m1.ID), "the resent id is dropped")
	assert.Equal(t, 1, eventsOf(boJournal, state.EventMessageReceived, m2.ID))
	assert.Equal(t, 1, eventsOf(adaJournal, state.EventMessageReceived, m3.ID))
	assert.Equal(t, 1, eventsOf(adaJournal, state.EventMessageDelivered, m1.ID), "the sender clears the id its receiver had")
	assert.Equal(t, 1, eventsOf(adaJournal, state.EventMessageDelivered, m2.ID))
	assert.Equal(t, 1, eventsOf(boJournal, state.EventMessageDelivered, m3.ID))
	assert.Empty(t, h.state().Outbox)
	bo, err := state.Load(boDir)
	require.NoError(t, err)
	assert.Empty(t, bo.Outbox)
}

// TestMessageToAnEndedChild: a message to a child whose life ended is
// answered failed recipient_ended, and nothing is sent or kept.
func TestMessageToAnEndedChild(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		if toolAnswered(r) {
			return bramatest.TextReply("noted", bramatest.Usage(10, 5))
		}
		return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("m", builtin.MessageSend, `{"to":"Bo","text":"are you there"}`))
	})
	opts := familyOptions(t)
	opts.MaxCycles = 2
	_, boDir := craftFamily(t, opts, state.StatusExhausted, nil, nil)
	h := resume(t, srv, opts)
	h.reportFor(2)
	h.shutdown()

	events := h.journal()
	assert.Zero(t, eventsOf(events, state.EventMessageSent, ""), "nothing is sent")
	results := 0
	for _, e := range events {
		if e.Type == state.EventToolFinished && e.Tool == builtin.MessageSend {
			results++
			assert.Equal(t, "failed", e.Status)
			assert.Contains(t, e.Chat.Content, `"error_code":"recipient_ended"`)
		}
	}
	assert.Equal(t, 1, results)
	assert.Empty(t, h.state().Outbox)
	assert.Zero(t, eventsOf(testkit.Journal(t, boDir), state.EventMessageReceived, ""))
}

// rootPID is the root being's actor.
func (h *harness) rootPID() *actor.PID { return h.system.NewLocalPID("family/" + family.RootName) }

// say asks the root to take the operator's message, as `singularity
// say` does through the control socket.
func (h *harness) say(id, text string) {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.rootPID(), messages.MessageRequest{Message: state.InMessage{ID: id, From: state.FromOperator, Text: text}}, waitLimit).Result()
	require.NoError(h.t, err)
	require.NoError(h.t, res.(messages.MessageResponse).Err)
}

// sleepTimer takes the clock's timers until the one of a sleep (more
// than 50 s), and returns it.
func sleepTimer(t *testing.T, clock *testkit.StepClock) *testkit.Timer {
	t.Helper()
	for {
		if timer := clock.Next(t, waitLimit); timer.After > 50*time.Second {
			require.LessOrEqual(t, timer.After, 60*time.Second)
			return timer
		}
	}
}

// sleepyBrama answers a being's first completion with a self_sleep of
// args and every later one with text; requests hears of each request.
func sleepyBrama(t *testing.T, args string) (*bramatest.Server, <-chan struct{}) {
	srv := newBrama(t)
	requests := make(chan struct{}, 64)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		requests <- struct{}{}
		if len(srv.Completions()) == 1 {
			return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("z", builtin.SelfSleep, args))
		}
		return bramatest.TextReply("awake", bramatest.Usage(10, 5))
	})
	return srv, requests
}

// TestSleepUntilAMessage: self_sleep ends the cycle without another
// completion, and the being asks for none while its 60 s sleep lasts
// (its clock's timer never fires here); the status says until when. A
// stop and a resume keep the sleep: the resumed being waits for the
// rest of it. The operator's message wakes it within a second, and its
// framing carries the message once.
func TestSleepUntilAMessage(t *testing.T) {
	t.Parallel()
	srv, requests := sleepyBrama(t, `{"seconds":60}`)
	opts := familyOptions(t)
	clock := testkit.NewStepClock()
	opts.Clock = clock
	h := start(t, srv, opts)
	<-requests
	timer := sleepTimer(t, clock)
	h.barrier()
	require.Len(t, srv.Completions(), 1, "the sleep ends the cycle: no completion for its tool result")
	d, err := h.system.Root.RequestFuture(h.rootPID(), messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(t, err)
	shown := d.(messages.Description)
	h.shutdown()
	assert.False(t, timer.Fire(), "the stop cancelled the sleep's timer")
	st := h.state()
	require.NotNil(t, st.Sleep)
	assert.True(t, st.Sleep.WakeOnMessage, "wake_on_message defaults to true")
	assert.Equal(t, st.Sleep.String(), shown.Status)
	assert.Equal(t, st.Sleep.Until.UTC().Format(time.RFC3339), shown.Figures["sleeping_until"])
	assert.Regexp(t, `^sleeping until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, st.Sleep.String())

	clock = testkit.NewStepClock()
	opts.Clock = clock
	h = resume(t, srv, opts)
	timer = sleepTimer(t, clock)
	h.barrier()
	require.Len(t, srv.Completions(), 1, "a resumed being sleeps on")

	began := time.Now()
	h.say("say-1", "wake up")
	select {
	case <-requests:
	case <-time.After(time.Second):
		t.Fatal("the message did not wake the being within 1 s")
	}
	assert.Less(t, time.Since(began), time.Second)
	assert.False(t, timer.Fire(), "the message cancelled the sleep")
	h.shutdown()
	woke := srv.Completions()[1]
	assert.Equal(t, 1, carrying(&woke, "Message from the operator: wake up"))
	assert.Nil(t, h.state().Sleep, "the next cycle ended the sleep")
}

// TestSleepWithoutWaking: a sleep with wake_on_message false is not
// ended by a message; its timer ends it.
func TestSleepWithoutWaking(t *testing.T) {
	t.Parallel()
	srv, requests := sleepyBrama(t, `{"seconds":60,"wake_on_message":false}`)
	opts := familyOptions(t)
	clock := testkit.NewStepClock()
	opts.Clock = clock
	opts.MaxCycles = 2
	h := start(t, srv, opts)
	<-requests
	timer := sleepTimer(t, clock)
	h.say("say-1", "wake up")
	h.barrier()
	require.Len(t, srv.Completions(), 1, "the message does not wake it")
	require.True(t, timer.Fire())
	<-requests
	h.reportFor(2)
	h.shutdown()
	second := srv.Completions()[1]
	assert.Equal(t, 1, carrying(&second, "Message from the operator: wake up"), "the message waited for the sleep's end")
}
