// Package crash SIGKILLs the real singularity binary at random moments
// while a whole family lives in `run` — the demo world's family, which
// spawns children and earns through the example Las's finance surface —
// and checks that what every being leaves behind always loads, always
// balances once resumed, and that no tool call ever reaches Las twice
// (docs/state.md#resume-and-recovery, docs/money.md#the-invariant,
// docs/differences.md#measured-targets "crash safety").
//
// The operator funds and speaks to the beings during the kills, and the
// relatives message each other: every fund acknowledged is applied once,
// every message reaches its receiver's model once (docs/money.md#funding,
// docs/family.md#messages).
//
// `make crash` runs thousands of kills (CRASH_KILLS, default 2000); the
// normal suite runs a few hundred.
package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

// The knobs, all environment variables so `make crash` can set them:
//
//	CRASH_KILLS         SIGKILLs in all (default defaultKills, fewer if
//	                    suiteBudget passes first; 20 with -short)
//	CRASH_RESUME_EVERY  a graceful resume after every n-th kill (default defaultResumeEvery)
//	CRASH_SEED          the seed of the random kill moments (default: from the clock)
//	CRASH_DIR           keep every family under this directory (default: a temporary one)
const (
	defaultKills       = 300
	defaultResumeEvery = 5
	// suiteBudget bounds the default run on a busy machine: once this
	// long has passed since the test began (builds included) no new kill
	// starts, if minSuiteKills (norace_test.go, race_test.go) have run.
	// CRASH_KILLS has no such bound.
	suiteBudget = 45 * time.Second
	// killsPerFamily kills go to one family; then a fresh family is
	// born, so the kills keep landing in first boots and first spawns
	// too, not only in an old family's routine.
	killsPerFamily = 25
	// maxFailures ends the test early: each failure is reported, and the
	// kills go on with a fresh family, so failures are independent.
	maxFailures = 5
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}

// tally is what the test did, for the closing line.
type tally struct {
	kills, resumes, families          int
	bootKills, timedKills, eventKills int
	beingChecks, tornSeen, injected   int // beingChecks: one per being per check
	beings, credits                   int // distinct beings checked; distinct revenue credits matched to a delivery
	deliveries, orphans, livedOrphans int
	grants, grantsCompleted, removed  int // grants seen; repaired at a start: completed, directories removed
	maxFamily                         int // most beings in one family
	earned                            money.Amount
	failures                          int
	killTime, resumeTime, checkTime   time.Duration
	msgs                              messageTally // all families'
	wireSends, wireTexts, wireResent  int          // message paragraphs sent to the model afresh; distinct; more than once
}

// messageTally counts one family's operator commands and messages, as
// its journals last said (docs/money.md#funding, docs/family.md#messages).
type messageTally struct {
	funds, fundsAcked, fundsApplied, fundsRefused int // fund commands: issued, acknowledged, in a journal, refused
	says, saysAcked, saysReceived, saysDelivered  int // say commands: issued, acknowledged, taken in, carried by an answered framing
	retried                                       int // commands run again with their key
	sent, sentReceived, sentDelivered, sentEnded  int // relatives' messages: sent, taken in, carried by an answered framing, to an ended being
	waiting                                       int // messages taken in that no answered framing carried yet
	carriedAgain                                  int // messages a framing carried again after one that was never answered
}

func (t *messageTally) add(o messageTally) {
	t.funds += o.funds
	t.fundsAcked += o.fundsAcked
	t.fundsApplied += o.fundsApplied
	t.fundsRefused += o.fundsRefused
	t.says += o.says
	t.saysAcked += o.saysAcked
	t.saysReceived += o.saysReceived
	t.saysDelivered += o.saysDelivered
	t.retried += o.retried
	t.sent += o.sent
	t.sentReceived += o.sentReceived
	t.sentDelivered += o.sentDelivered
	t.sentEnded += o.sentEnded
	t.waiting += o.waiting
	t.carriedAgain += o.carriedAgain
}

// tallyMessages counts a family's commands and messages: funds and
// says the journals hold, and what book read from them.
func tallyMessages(cmds []*command, funds, says int, book messageBook) messageTally {
	t := messageTally{fundsApplied: funds, saysReceived: says, carriedAgain: book.again, waiting: len(book.waiting)}
	for _, c := range cmds {
		acked, refused := 0, 0
		if c.acked {
			acked = 1
		}
		if c.refuse != "" {
			refused = 1
		}
		if c.tries > 1 {
			t.retried++
		}
		if c.op == "fund" {
			t.funds++
			t.fundsAcked += acked
			t.fundsRefused += refused
			continue
		}
		t.says++
		t.saysAcked += acked
		t.saysDelivered += book.answered[c.key]
	}
	t.sent = len(book.sent)
	for id := range book.sent {
		if book.received[id] != "" {
			t.sentReceived++
		}
		if book.delivered[id] == "recipient_ended" {
			t.sentEnded++
		}
		t.sentDelivered += book.answered[id]
	}
	return t
}

// TestCrashSpawningEarningFamily runs `singularity run` on a family of
// the demo world (the simulated Brama scripts Ada to spawn Bo and Cy and
// Bo to spawn Di; every being earns through finance__finance_sell_report
// of the example Las) and SIGKILLs it at a random moment, over and over
// on the same state directories: each run resumes what the last one
// left. A kill lands either at a random time (up to 250 ms) after the
// process started — boot, recovery, Las start-up, and in a family's
// first run the fresh state itself — or up to 20 ms after the n-th
// completion request of that run (n up to 24, about one cycle of the
// whole family: debits, tool calls, spawns, saves). Every second
// family's first run is killed only after its first child has spoken,
// so spawning certainly happens. After killsPerFamily kills a fresh
// family is born.
//
// After every kill, for the root and every directory under children/
// (recursively), with the process dead:
//
//  1. state.json loads (state.Load);
//  2. the journal loads (state.ReadJournal); a torn last line is legal;
//  3. the checkpoint's budget is accounted for exactly by its journal up
//     to the checkpoint's journal_seq (explainedByPrefix), and the
//     journal reaches that seq;
//  4. no child name was spawned twice under one parent, and no tool call
//     reached a Las twice: the family's Las is recordlas (the example
//     Las behind a filter that writes down every tools/call it
//     receives), and the scripted arguments name the being and the
//     cycle, so a key seen twice is one call delivered twice, across all
//     kills of the family;
//  5. each effect is checked call by call (callEffects): every call
//     finishes at most once under its call id, its built-in effects
//     (memories, rules, learnings, prompt, model) are applied at most
//     once each, and every revenue_credited is the result of its own
//     finance call: the call's key is among the deliveries, and no two
//     credits of the family share one.
//  6. the operator's commands and the messages (operatorProblems,
//     readMessages): while each run lives, up to freshPerRun random
//     `singularity fund` and `say` commands (the real binary, each with
//     its deadline) go to the family's beings at random moments, some
//     meeting the kill; an acknowledged one is applied exactly once, one
//     not acknowledged at most once (it is run again with its key at the
//     next start), a refused one never; the relatives message each other
//     every cycle (the family tools, simbrama's talkative world), and
//     every message is taken in once and reaches its receiver's model in
//     exactly one answered framing, or waits in its inbox.
//
// After one kill in ten, a torn last line is appended to one being's
// journal (a crash inside the append's write, which a SIGKILL almost
// never produces); the next runs must repair it.
//
// After every CRASH_RESUME_EVERY-th kill the family is resumed: `run
// --resume` until every recorded, living being has sent its first
// completion (so each has done its start-up recovery), then SIGINT, and
// the process must exit 0 within its deadline. Then, for every being:
// the invariant is exact over its whole journal (testkit.CheckInvariant),
// no recorded being is left running or stopping or with a torn line, and
// the family's grants and children match one to one. During the resume
// every command not yet acknowledged is run again and must be, and every
// relative's message sent before it is taken in (the outboxes drain).
func TestCrashSpawningEarningFamily(t *testing.T) {
	testStart := time.Now() // the budget counts the builds too
	kills := envInt(t, "CRASH_KILLS", defaultKills)
	budget := time.Duration(0)
	if os.Getenv("CRASH_KILLS") == "" {
		budget = suiteBudget
		if testing.Short() {
			kills = 20
		}
	}
	every := envInt(t, "CRASH_RESUME_EVERY", defaultResumeEvery)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CRASH_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "CRASH_SEED")
	}
	t.Logf("seed %d (CRASH_SEED=%d replays the same kill moments; the processes' own timing still varies): %d kills, a resume after every %d",
		seed, seed, kills, every)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	base := os.Getenv("CRASH_DIR")
	if base == "" {
		base = t.TempDir()
	} else {
		base = filepath.Join(base, fmt.Sprintf("seed-%d", seed))
	}
	bin := testkit.Singularity(t)
	las := testkit.Build(t, "./test/crash/recordlas")
	obs := newObserver()
	proxy := bramaProxy(t, obs)

	c := &crasher{t: t, bin: bin, las: las, proxy: proxy, obs: obs, rng: rng, beings: map[string]bool{}, wire: map[string]int{}}
	started := time.Now()
	inFamily := 0
	for i := 0; i < kills && c.n.failures < maxFailures; i++ {
		if budget > 0 && i >= minSuiteKills && time.Since(testStart) > budget {
			t.Logf("stopping after %d of %d kills: the default run's time budget of %v is spent (a busy machine, or the race detector)", i, kills, budget)
			break
		}
		if c.fam == nil || inFamily == killsPerFamily {
			c.newFamily(filepath.Join(base, fmt.Sprintf("family-%03d", c.n.families)))
			inFamily = 0
		}
		inFamily++
		ok := c.kill(i, inFamily == 1)
		if ok && (i+1)%every == 0 {
			ok = c.resume(i)
		}
		if !ok {
			c.n.failures++
			c.fam = nil // the next kill starts a fresh family
		}
	}
	if c.fam != nil && c.n.kills%every != 0 {
		if !c.resume(c.n.kills - 1) {
			c.n.failures++
		}
	}
	elapsed := time.Since(started).Round(time.Millisecond)
	c.foldFamily()
	n := c.n
	t.Logf("%d kills (%d at boot, %d at a random time, %d after a random completion) and %d resumes over %d families in %s: "+
		"%d beings checked %d times in all (largest family %d), %d torn last lines seen (%d injected), %d deliveries checked, %d revenue credits each matched to its own delivery, "+
		"%d unrecorded child directories (%d of them with a journal), %d grants (%d completed at a start after a kill, %d child directories without a grant removed), earned %s; %d failures",
		n.kills, n.bootKills, n.timedKills, n.eventKills, n.resumes, n.families, elapsed,
		len(c.beings), n.beingChecks, n.maxFamily, n.tornSeen, n.injected, n.deliveries, n.credits, n.orphans, n.livedOrphans,
		n.grants, n.grantsCompleted, n.removed, n.earned, n.failures)
	m := n.msgs
	t.Logf("operator and messages: funds %d issued, %d acknowledged, %d applied (%d refused); says %d issued, %d acknowledged, %d taken in, %d delivered to the model; "+
		"%d commands retried with their key after a kill; relatives' messages %d sent, %d taken in, %d delivered to the model (%d to an ended being); "+
		"%d taken in and waiting for a framing at the last check; %d carried again by the framing that replaced an unanswered one; "+
		"on the wire: %d message paragraphs sent afresh %d times, %d of them more than once (an unanswered framing sent again)",
		m.funds, m.fundsAcked, m.fundsApplied, m.fundsRefused, m.says, m.saysAcked, m.saysReceived, m.saysDelivered,
		m.retried, m.sent, m.sentReceived, m.sentDelivered, m.sentEnded, m.waiting, m.carriedAgain,
		n.wireTexts, n.wireSends, n.wireResent)
	if twice := c.obs.duplicates(); len(twice) > 0 {
		t.Errorf("%d requests carried a message paragraph twice, e.g. %q", len(twice), twice[0])
	}
	t.Logf("time: kills %s (%s each), resumes %s (%s each), checks %s of them",
		n.killTime.Round(time.Millisecond), (n.killTime / time.Duration(max(n.kills, 1))).Round(time.Millisecond),
		n.resumeTime.Round(time.Millisecond), (n.resumeTime / time.Duration(max(n.resumes, 1))).Round(time.Millisecond),
		n.checkTime.Round(time.Millisecond))
	if n.failures > 0 {
		t.Fatalf("%d failures (seed %d; see above; CRASH_SEED=%d CRASH_DIR=<dir> replays the kill moments and keeps the state directories)", n.failures, seed, seed)
	}
	if n.kills >= killsPerFamily+1 {
		// Every second family's first kill waits for a child's first
		// completion, so spawning is certain to have happened.
		require.Greater(t, n.maxFamily, 1, "the family spawned no child")
		require.Positive(t, n.earned.Sign(), "the family earned nothing")
		require.Positive(t, n.deliveries, "no tool call reached Las")
		require.Positive(t, n.credits, "no revenue credit was matched to its delivery")
		require.Positive(t, m.fundsAcked, "no fund was acknowledged")
		require.Positive(t, m.saysDelivered, "no operator's message reached a model")
		require.Positive(t, m.sentDelivered, "no relative's message reached a model")
	}
}

// crasher runs the kills and resumes of one test.
type crasher struct {
	t     *testing.T
	bin   string // singularity
	las   string // recordlas
	proxy string
	obs   *observer
	rng   *rand.Rand
	run   int // the number of the last process started

	fam     *family
	log     *deliveryLog
	seen    map[string]string // delivery key → where it was first seen
	orphans map[string]bool   // unrecorded child directories seen
	counted map[string]bool   // journal events counted in the tally (dir#seq)
	matched map[string]bool   // revenue credits counted in the tally (delivery key)
	beings  map[string]bool   // the directories of every being checked, all families
	earned  money.Amount      // the current family's, at its last check
	n       tally

	op      *operator      // the current family's commands
	targets []target       // the beings commands may go to, as the last check found them
	msgs    messageTally   // the current family's, at its last check
	wire    map[string]int // the current family's message paragraphs sent afresh
}

// foldFamily adds the current family's figures to the test's.
func (c *crasher) foldFamily() {
	c.n.earned = c.n.earned.Add(c.earned)
	c.earned = money.Amount{}
	c.n.msgs.add(c.msgs)
	c.msgs = messageTally{}
	for _, sends := range c.wire {
		c.n.wireTexts++
		c.n.wireSends += sends
		if sends > 1 {
			c.n.wireResent++
		}
	}
	c.wire = map[string]int{}
}

// forget ends the observer's watch of a run, keeping the message
// paragraphs it sent afresh for the family's figures.
func (c *crasher) forget(run int) {
	for p, n := range c.obs.forget(run) {
		c.wire[p] += n
	}
}

func (c *crasher) newFamily(dir string) {
	c.foldFamily()
	c.fam = newFamily(c.t, dir, c.las)
	c.op = &operator{bin: c.bin, root: c.fam.stateDir, home: c.fam.dir, family: c.n.families}
	c.targets = nil
	c.log = newDeliveryLog(c.fam.recordDir)
	c.seen = map[string]string{}
	c.orphans = map[string]bool{}
	c.counted = map[string]bool{}
	c.matched = map[string]bool{}
	c.n.families++
}

func (c *crasher) start() *process {
	c.run++
	return c.fam.start(c.t, c.bin, c.proxy, c.run)
}

// countRepairs counts, once each, the grants in the family's journals and
// the start-up repairs of grants interrupted by a kill.
func (c *crasher) countRepairs(members []member) {
	for _, m := range members {
		for _, e := range m.events {
			key := fmt.Sprintf("%s#%d", m.dir, e.Seq)
			if c.counted[key] {
				continue
			}
			switch {
			case e.Type == state.EventEndowmentGranted:
				c.n.grants++
			case e.Type == state.EventWarning && strings.HasPrefix(e.Message, "completed the grant of child"):
				c.n.grantsCompleted++
			case e.Type == state.EventWarning && strings.HasPrefix(e.Message, "removed child directory"):
				c.n.removed++
			default:
				continue
			}
			c.counted[key] = true
		}
	}
}

// fail reports problems of one check; it returns false when there were
// any.
func (c *crasher) fail(what string, p *process, problems []string) bool {
	if len(problems) == 0 {
		return true
	}
	msg := fmt.Sprintf("%s (family %s):\n  %s", what, c.fam.dir, strings.Join(problems, "\n  "))
	if p != nil {
		if out := p.stderr.String(); out != "" {
			msg += "\nstderr of run " + strconv.Itoa(p.run) + " (its last 64 KiB):\n" + out
		}
	}
	c.t.Error(msg)
	return false
}

// kill starts a run, SIGKILLs it at a random moment and checks what it
// left. first is the family's first run.
func (c *crasher) kill(i int, first bool) bool {
	c.n.kills++
	t0 := time.Now()
	defer func() { c.n.killTime += time.Since(t0) }()
	p := c.start()
	defer c.forget(p.run)
	rng := c.rng
	// The operator's commands run while the family lives, and may meet
	// its kill.
	sess := c.op.start(rng, c.targets, rng.IntN(freshPerRun+1))
	defer sess.stop()
	var moment string
	switch {
	case first && c.n.families%2 == 1 || !first && rng.IntN(4) == 0:
		// At a random time after the start: boot, recovery, Las
		// start-up, and (the first run) the fresh state itself.
		d := time.Duration(rng.Int64N(int64(250 * time.Millisecond)))
		moment = fmt.Sprintf("%v after the start", d.Round(time.Microsecond))
		if first {
			c.n.bootKills++
		} else {
			c.n.timedKills++
		}
		select {
		case <-time.After(d):
		case <-p.exited:
		}
	default:
		// A random few milliseconds after the n-th completion request of
		// this run (for a family's first run: after the first child's
		// first one, so the family certainly spawns).
		k := 1 + rng.IntN(24)
		d := time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
		cond := func(total int, _ map[string]int) bool { return total >= k }
		moment = fmt.Sprintf("%v after completion %d", d.Round(time.Microsecond), k)
		if first {
			k = rng.IntN(10)
			moment = fmt.Sprintf("%v after %d completions more than the first child's first", d.Round(time.Microsecond), k)
			base := -1
			cond = func(total int, byName map[string]int) bool {
				if base < 0 {
					for name := range byName {
						if name != rootName {
							base = total
						}
					}
				}
				return base >= 0 && total >= base+k
			}
		}
		c.n.eventKills++
		if !c.obs.until(p.run, p.exited, triggerWait, cond) {
			select {
			case <-p.exited:
			default:
				_, byName, _ := c.obs.snapshot(p.run)
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
				_, _ = p.wait(exitWait)
				return c.fail(fmt.Sprintf("kill %d: the family did not reach the kill moment (%s) within %v; completions by being: %v", i, moment, triggerWait, byName), p,
					[]string{"the family stopped making progress"})
			}
		}
		select {
		case <-time.After(d):
		case <-p.exited:
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	code, err := p.wait(exitWait)
	if err != nil {
		return c.fail(fmt.Sprintf("kill %d", i), p, []string{err.Error()})
	}
	if code != -1 {
		return c.fail(fmt.Sprintf("kill %d (%s)", i, moment), p, []string{fmt.Sprintf("the run exited by itself with code %d before the kill", code)})
	}
	if !c.check(fmt.Sprintf("after kill %d (%s)", i, moment), p, false, sess.stop()) {
		return false
	}
	// A SIGKILL almost never lands inside the one write of an append, so
	// every tenth kill leaves a torn last line in one being's journal, as
	// a crash inside that write (or power loss after a partial
	// write-back) would. Whoever opens that journal next must repair it;
	// a graceful resume must leave none.
	if rng.IntN(10) == 0 {
		c.injectTornLine()
	}
	return true
}

// targetsOf lists the beings of members that commands may go to: each
// one its parent records, with its state.
func targetsOf(members []member, root string) []target {
	var out []target
	for _, m := range members {
		if !m.reachable || m.being == nil {
			continue
		}
		id := m.id()
		if m.dir == root {
			id = ""
		}
		out = append(out, target{dir: m.dir, id: id})
	}
	return out
}

// injectTornLine appends the start of a journal line, without its
// newline, to the journal of one being the next run will resume.
func (c *crasher) injectTornLine() {
	members, _ := walk(c.fam.stateDir)
	var live []member
	for _, m := range members {
		if m.reachable && m.being != nil && len(m.events) > 0 && !m.torn &&
			m.being.Status != state.StatusExhausted && m.being.Status != state.StatusFailed {
			live = append(live, m)
		}
	}
	if len(live) == 0 {
		return
	}
	m := live[c.rng.IntN(len(live))]
	line := `{"type":"cost_debited","at":"2026-08-24T22:05:13.100000Z","cycle":` + strconv.FormatUint(m.being.Cycle+1, 10) + `,"amount":"0.0`
	f, err := os.OpenFile(filepath.Join(m.dir, journalFile), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(c.t, err)
	_, err = f.WriteString(line[:1+c.rng.IntN(len(line)-1)])
	require.NoError(c.t, err)
	require.NoError(c.t, f.Close())
	c.n.injected++
}

// resume runs the family gracefully: `run --resume` until every
// recorded, living being has sent a completion, then SIGINT; then it
// checks the family.
func (c *crasher) resume(i int) bool {
	c.n.resumes++
	t0 := time.Now()
	defer func() { c.n.resumeTime += time.Since(t0) }()
	p := c.start()
	defer c.forget(p.run)
	what := fmt.Sprintf("resume after kill %d", i)
	sess := c.op.start(c.rng, c.targets, 1)
	defer sess.stop()
	var problems []string
	if missing := c.waitReady(p); len(missing) > 0 {
		_, byName, _ := c.obs.snapshot(p.run)
		problems = append(problems, fmt.Sprintf("within %v these beings never sent a completion: %v (completions by being: %v)", readyWait, missing, byName))
	}
	// Every command the kills left unacknowledged was run again with its
	// key while the family lived: now each is acknowledged (or refused).
	problems = append(problems, sess.finish()...)
	for _, cmd := range c.op.cmds {
		if !cmd.acked && cmd.refuse == "" {
			problems = append(problems, fmt.Sprintf("%s %s to %s not acknowledged after %d tries, the last in a live family", cmd.op, cmd.key, cmd.dir, cmd.tries))
		}
	}
	// The senders' outboxes drain while the family lives.
	if left := c.waitDrained(p); len(left) > 0 {
		problems = append(problems, fmt.Sprintf("within %v, %d relatives' messages were not taken in: %v", readyWait, len(left), left))
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGINT)
	}
	code, err := p.wait(stopWait)
	switch {
	case err != nil:
		problems = append(problems, err.Error())
	case code != 0:
		problems = append(problems, fmt.Sprintf("the run exited with code %d, not 0", code))
	}
	if !c.fail(what, p, problems) {
		return false
	}
	return c.check(what, p, true, nil)
}

// waitDrained waits, reading the family's journals again after every
// few completions, until every relative's message sent before it began
// (the outboxes this run started with, and what it sent while its beings
// got ready) was taken in, or its receiver ended; it returns those still
// not taken in. What is sent later is the next resume's to wait for.
func (c *crasher) waitDrained(p *process) []string {
	var left []string
	var due map[string]bool
	next := 0
	c.obs.until(p.run, p.exited, readyWait, func(total int, _ map[string]int) bool {
		if total < next {
			return false
		}
		next = total + 4
		members, _ := walk(c.fam.stateDir)
		book, _ := readMessages(members)
		left = left[:0]
		for _, u := range book.undelivered() {
			if due == nil || due[u.id] {
				left = append(left, u.String())
			}
		}
		if due == nil {
			due = map[string]bool{}
			for _, u := range book.undelivered() {
				due[u.id] = true
			}
		}
		return len(left) == 0
	})
	return left
}

// waitReady waits for the root's first completion of the run, then for
// that of each child it records that is not dormant, and so on down the
// tree: by its first completion a being has done its start-up recovery
// and saved (docs/state.md#resume-and-recovery), and started the children
// it records. It returns the names of the beings that never got there.
func (c *crasher) waitReady(p *process) []string {
	type pending struct{ dir, name string }
	queue := []pending{{c.fam.stateDir, rootName}}
	deadline := time.Now().Add(readyWait)
	var missing []string
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		ok := c.obs.until(p.run, p.exited, time.Until(deadline), func(_ int, byName map[string]int) bool { return byName[next.name] > 0 })
		if !ok {
			missing = append(missing, next.name)
			continue
		}
		b, err := state.Load(next.dir)
		if err != nil {
			missing = append(missing, next.name+" (state: "+err.Error()+")")
			continue
		}
		for _, ch := range b.Mind.Children {
			dir := ch.StateDir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(next.dir, "children", ch.ID)
			}
			cb, err := state.Load(dir)
			if err != nil {
				missing = append(missing, ch.Name+" (state: "+err.Error()+")")
				continue
			}
			if cb.Status == state.StatusExhausted || cb.Status == state.StatusFailed {
				continue // loaded dormant
			}
			queue = append(queue, pending{dir, ch.Name})
		}
	}
	return missing
}

// check walks the family and runs the checks of a kill (graceful false)
// or of a resume (graceful true), with the problems the run's commands
// met.
func (c *crasher) check(what string, p *process, graceful bool, commandProblems []string) bool {
	t0 := time.Now()
	defer func() { c.n.checkTime += time.Since(t0) }()
	members, problems := walk(c.fam.stateDir)
	problems = append(problems, commandProblems...)
	// The operator's commands and every message (docs/money.md#funding,
	// docs/family.md#messages).
	funds, says, opProblems := operatorProblems(members, c.op.cmds)
	problems = append(problems, opProblems...)
	book, msgProblems := readMessages(members)
	problems = append(problems, msgProblems...)
	c.msgs = tallyMessages(c.op.cmds, funds, says, book)
	c.targets = targetsOf(members, c.fam.stateDir)
	earned := money.Amount{}
	beings := 0
	credited := map[string]string{} // delivery key → the being whose credit it is
	for _, m := range members {
		if m.being == nil {
			if graceful && m.recorded && m.parent != "" {
				problems = append(problems, fmt.Sprintf("%s: a recorded child without state.json", m.dir))
			}
			continue
		}
		beings++
		c.n.beingChecks++
		c.beings[m.dir] = true
		if m.torn {
			c.n.tornSeen++
		}
		b := m.being
		earned = earned.Add(b.Budget.Earned)
		keys, effectProblems := callEffects(m)
		problems = append(problems, effectProblems...)
		for _, k := range keys {
			if other, twice := credited[k]; twice {
				problems = append(problems, fmt.Sprintf("%s: a revenue credit for call %s, which %s was credited for already", m.where(), k, other))
				continue
			}
			credited[k] = m.where()
		}
		if !graceful {
			if err := explainedByPrefix(b, m.events); err != nil {
				problems = append(problems, fmt.Sprintf("%s: the checkpoint is not a state of its journal: %v", m.where(), err))
			}
			continue
		}
		note := ""
		if !m.reachable {
			if !c.orphans[m.dir] {
				c.orphans[m.dir] = true
				c.n.orphans++
				if len(m.events) > 0 {
					c.n.livedOrphans++
				}
			}
			note = " (a child directory no state.json records: it was never resumed)"
		}
		if err := testkit.CheckInvariant(b.Budget, m.events); err != nil {
			problems = append(problems, fmt.Sprintf("%s%s: status %s, cycle %d: %v", m.where(), note, b.Status, b.Cycle, err))
		}
		if m.reachable && m.torn {
			problems = append(problems, fmt.Sprintf("%s: a torn last line after a graceful stop", m.where()))
		}
		if m.reachable && (b.Status == state.StatusRunning || b.Status == state.StatusStopping) {
			problems = append(problems, fmt.Sprintf("%s: status %s after the family stopped", m.where(), b.Status))
		}
	}
	c.n.maxFamily = max(c.n.maxFamily, beings)
	c.earned = earned
	problems = append(problems, duplicateNames(members)...)

	fresh, err := c.log.next()
	if err != nil {
		problems = append(problems, "deliveries: "+err.Error())
	}
	for _, d := range fresh {
		c.n.deliveries++
		k := d.key()
		where := fmt.Sprintf("%s, Las pid %d, request id %s", what, d.PID, d.RPCID)
		if first, dup := c.seen[k]; dup {
			problems = append(problems, fmt.Sprintf("tool call delivered twice: %s (first seen %s; again %s)", k, first, where))
			continue
		}
		c.seen[k] = where
	}
	// Every revenue credit is the result of one finance call that reached
	// the Las: its call's key is among the deliveries, and no two credits
	// share one (credited is keyed by it).
	for k, who := range credited {
		if !c.matched[k] {
			c.matched[k] = true
			c.n.credits++
		}
		if _, ok := c.seen[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s: a revenue credit for call %s, which never reached the Las", who, k))
		}
	}
	if graceful {
		problems = append(problems, familyProblems(c.fam.stateDir, members)...)
		c.countRepairs(members)
	}
	return c.fail(what, p, problems)
}
