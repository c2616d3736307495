package supervision

import "fmt"

// Restarted is the restart news every supervised actor gets, a supervision
// event like Event: a Strategy sends it to an actor it restarted, once the
// restart has happened. The new incarnation reads it after Started, though
// messages queued for it during the backoff may come first. Restarts counts
// the restarts so far; Reason is the failure that caused the last one. Las
// and child beings show both in the debug tree.
type Restarted struct {
	Restarts int
	Reason   string
}

func (r Restarted) String() string {
	return fmt.Sprintf("Restarted{%d: %s}", r.Restarts, r.Reason)
}
