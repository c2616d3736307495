package messages

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
)

// LasCallRequest asks the Las actor to run one Las tool. Arguments is the
// JSON object the model produced. Deadline is the moment the caller gives
// up (zero: now plus the actor's MCP deadline); a call still waiting when
// its deadline passes is never sent to Las. Answered with LasCallResponse.
type LasCallRequest struct {
	Tool      string
	Arguments json.RawMessage
	Deadline  time.Time
}

func (r LasCallRequest) String() string { return "LasCallRequest{" + r.Tool + "}" }

// LasCallResponse carries the outcome of one call: success, failed
// (remote_tool, unknown_tool, invalid_arguments) or indeterminate (mcp).
type LasCallResponse struct {
	Outcome outcome.Outcome
}

func (r LasCallResponse) String() string {
	return "LasCallResponse{" + r.Outcome.Status + " " + r.Outcome.ErrorCode + "}"
}

// LasCatalogRequest asks for the Las tools. While Las is starting or
// restarting the answer waits until the session is ready or has failed
// for good; ask with a deadline. An ask still queued in the mailbox when
// the Las actor stops for good is never answered (protoactor drops it):
// the parent's reliable signals are LasCatalogChanged and LasUnavailable.
type LasCatalogRequest struct{}

// LasCatalogResponse lists the Las tools in Las order. Available is false
// when Las has failed for good; Err then says why, as a classified error
// with its exact sentence, e.g. "mcp: required Las surface unavailable:
// finance" (docs/las.md#required-surfaces).
type LasCatalogResponse struct {
	Tools     []chat.Tool
	Available bool
	Err       error
}

func (r LasCatalogResponse) String() string {
	return fmt.Sprintf("LasCatalogResponse{tools=%d available=%t}", len(r.Tools), r.Available)
}

// LasPingRequest asks the Las actor to run a liveness ping now, as the
// periodic one does; it is answered with LasPingResponse once Las answered
// or the ping deadline passed (a failed ping restarts Las).
type LasPingRequest struct{}

// LasPingResponse reports a liveness ping: OK false means Las did not
// answer in time or was not ready.
type LasPingResponse struct {
	OK bool
}

// LasRestarted tells the parent that the Las actor was restarted by its
// supervisor: Restarts is the count so far, Reason the failure that caused
// this one.
type LasRestarted struct {
	Restarts int
	Reason   string
}

func (e LasRestarted) String() string {
	return fmt.Sprintf("Las restarted (%d): %s", e.Restarts, e.Reason)
}

// LasCatalogChanged tells the parent the Las tools after a (re)listing:
// at boot, after a restart, or after Las announced list_changed. The
// parent rebuilds its catalogue from them.
type LasCatalogChanged struct {
	Tools []chat.Tool
}

func (e LasCatalogChanged) String() string {
	return fmt.Sprintf("LasCatalogChanged{tools=%d}", len(e.Tools))
}

// LasSurfaceMissing warns that a required surface was absent after a
// restart or a re-listing; Las keeps being retried under the same backoff.
type LasSurfaceMissing struct {
	Surface string
}

func (e LasSurfaceMissing) String() string {
	return "required Las surface unavailable: " + e.Surface
}

// LasUnavailable tells the parent that the Las actor has stopped for good:
// its restart intensity was exceeded, or it failed permanently. Reason is
// "restart intensity exceeded" or the failure's sentence; Err is the
// classified failure that ended it. The being journals String() as a
// warning and lives on with built-in tools only. The actor sends it while
// stopping, so the parent may see the Las child's *actor.Terminated
// first.
type LasUnavailable struct {
	Reason string
	Err    error
}

func (e LasUnavailable) String() string { return "Las unavailable: " + e.Reason }

// LasWarning is a warning of the Las actor for the being's journal: a
// re-list refused (the previous catalogue kept), a server of a servers
// file unavailable while the others go on.
type LasWarning struct {
	Text string
}

func (e LasWarning) String() string { return e.Text }
