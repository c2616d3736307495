package being

// A being's life is one state machine, written down here once. Its phase
// says what every message means; while a cycle runs, waiting says what
// the cycle waits for; link says what the being knows of its Las.
//
// Phases and their transitions (a stop is messages.StopBeing; "ends by
// itself" is exhaustion, a permanent Brama failure or a failed boot):
//
//	phase             what holds                                  next
//	----------------  ------------------------------------------  ---------------------------------------------
//	booting           state loaded (or a fresh one not yet       idle: the boot catalogue is built and the
//	                  written); Las starting, its catalogue       boot step (started, a checkpoint) durable
//	                  asked; no cycle yet                         stoppingChildren: stop, or boot fails
//	                                                              stopped: boot fails before the state loaded
//	idle              between cycles: a tick is scheduled (or     cycling: the tick
//	                  none, once's cycle or the cycle limit done) stoppingChildren: stop, or ends by itself
//	                  (dormant: no tick, no Las)                  booting: dormant, a fund un-ended it (awaken)
//	cycling           a cycle runs; waiting names its step        idle: the cycle ended
//	                                                              draining: stop
//	                                                              stoppingChildren: the cycle ended the being
//	draining          stop asked during a cycle: it ends at the   stoppingChildren: the round boundary, or the
//	                  next round boundary                         step in flight abandoned (grace, second stop)
//	                                                              abandoning: abandon asked while a write is
//	                                                              in flight
//	abandoning        abandon asked while a write is in flight:   stoppingChildren: the write landed and the
//	                  it lands (or fails) within one fsync, and   next step abandoned the cycle
//	                  a step with money is never dropped half
//	                  applied, so it lands first
//	stoppingChildren  status "stopping" (in memory); every live   stoppingLas: the last child stopped
//	                  child told to stop
//	stoppingLas       Las told to stop                            saving: Las terminated (or there was none)
//	                                                              and no write is in flight
//	saving            the final step (stopped) and checkpoint     stopped: both durable; or a stop that does
//	                  are being written                           not wait while storage fails
//	                                                              idle, dormant: both durable, and a child
//	                                                              held under its family's hold ended
//	                                                              exhausted by itself (rest, revive.go)
//	stopped           final status durable (unless the boot       — (a later stop is answered again)
//	                  never completed: then nothing is written),
//	                  parent told; files closed
//
// Beside the phase, b.stop says a stop was asked (or the being ends by
// itself): a cycle in progress drains, and an idle being does not start
// the next. b.booted says the boot step is durable: only then does the
// being write anything.
//
// What abandoning a step does depends on waiting (abandonWork,
// closePendingCalls): a model call is dropped (its cost, if any, is the
// gateway's to report, never debited twice); a tool call in flight (Las,
// Most, the model list, a file tool) is closed as indeterminate, since
// its effect is unknown; tool calls not yet started are closed as
// not_run; a durable write in flight is never abandoned, but a write
// held because storage fails is given up (none of it took effect).
// Money never waits on another actor: a completion is priced and a
// credit found (internal/store/budget) in the handler that journals
// them, so the answer that carries money and its step are one.
type phase int

const (
	phaseBooting phase = iota
	phaseIdle
	phaseCycling
	phaseDraining
	phaseAbandoning
	phaseStoppingChildren
	phaseStoppingLas
	phaseSaving
	phaseStopped
)

var phaseNames = [...]string{"booting", "idle", "cycling", "draining", "abandoning", "stopping_children", "stopping_las", "saving", "stopped"}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase(?)"
}

// inCycle reports whether a cycle is running (b.cycle is set).
func (p phase) inCycle() bool {
	return p == phaseCycling || p == phaseDraining || p == phaseAbandoning
}

// waitFor is what the running cycle waits for.
type waitFor int

const (
	waitNothing waitFor = iota // between steps
	waitModel                  // a completion from the gateway
	waitLas                    // a Las tool call
	waitMost                   // a Most tool call on a worker goroutine
	waitModels                 // the gateway's model list, for switch_model
	waitFile                   // a file tool on a worker goroutine
	waitChild                  // a spawned child's state directory being written
	waitStorage                // a durable write (in flight, or held while storage fails)
	waitLimit                  // the spend limiter's admission of a reservation
)

var waitNames = [...]string{"", "model", "las", "most", "models", "file", "child", "storage", "spend_limit"}

// String is the debug endpoint's waiting_for figure.
func (w waitFor) String() string {
	if int(w) < len(waitNames) {
		return waitNames[w]
	}
	return "wait(?)"
}

// lasLink is what the being knows of its Las actor.
type lasLink int

const (
	lasAbsent   lasLink = iota // no Las: none configured, or a dormant being
	lasStarting                // spawned; its catalogue is asked
	lasUp                      // serving; its tools are in the catalogue
	lasLost                    // ended; why is not known yet
	lasGone                    // ended, and why is journaled
)
