package las

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// ToolsCommandTimeout is the fixed MCP deadline of the `tools` command.
const ToolsCommandTimeout = 120 * time.Second

// host is the minimal parent of a Las actor outside a being: it spawns
// Las under supervision.ForLas and remembers the first verdict its child
// sends up — the tool list, or that Las is unavailable — for whoever
// waits for it. Parent events are the reliable signal: an ask queued in
// the mailbox of a Las actor that then stops is never answered.
type host struct {
	opts    Options
	las     *actor.PID
	done    bool
	result  listed
	waiters []*actor.PID
	// lastReason is the failure of Las's last restart: a wait that ends
	// before Las is ready says why (docs/las.md#las-at-boot).
	lastReason string
}

type (
	awaitTools struct{}
	// giveUp ends the wait for Las, from ListTools.
	giveUp struct{}
	listed struct {
		tools []chat.Tool
		err   error
	}
)

var _ actor.Actor = (*host)(nil)

func (h *host) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.las, _ = ctx.SpawnNamed(Props(h.opts), supervision.LasChildName)
	case messages.LasCatalogChanged:
		h.settle(ctx, listed{tools: m.Tools})
	case messages.LasUnavailable:
		err := m.Err
		if err == nil {
			err = fault.Upstream(fault.ClassMCP, fault.Permanent, "Las unavailable: %s", m.Reason)
		}
		h.settle(ctx, listed{err: err})
	case messages.LasRestarted:
		h.lastReason = m.Reason
	case giveUp:
		err := fault.Upstream(fault.ClassMCP, fault.Indeterminate, "Las did not list its tools within the deadline")
		if h.lastReason != "" {
			err = fault.Upstream(fault.ClassMCP, fault.Transient, "%s", strings.TrimPrefix(h.lastReason, fault.ClassMCP.Prefix()+": "))
		}
		h.settle(ctx, listed{err: err})
		ctx.Respond(h.result)
	case awaitTools:
		if h.done {
			ctx.Respond(h.result)
			return
		}
		h.waiters = append(h.waiters, ctx.Sender())
	}
}

func (h *host) settle(ctx actor.Context, r listed) {
	if h.done {
		return
	}
	h.done, h.result = true, r
	for _, w := range h.waiters {
		ctx.Send(w, r)
	}
	h.waiters = nil
}

// ListTools starts Las once (supervised as in a being, so a transient
// failure is retried), waits for its tool list, stops it with the
// shutdown ladder and returns the tools in Las order. The wait is bounded
// by ctx and by the MCP deadline. Its errors are the classified sentences
// of docs/las.md#overview (exit 3).
func ListTools(ctx context.Context, opts Options) ([]chat.Tool, error) {
	opts = opts.withDefaults()
	// protoactor's own lines (dead letters of the host's last messages
	// after a stop, for one) are passed on only at warn and above, as in
	// a family (docs/configuration.md#logging).
	quiet := logging.AtLeast(opts.Logger.With("lib", "protoactor"), slog.LevelWarn)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer system.Shutdown()

	props := actor.PropsFromProducer(func() actor.Actor { return &host{opts: opts} },
		actor.WithSupervisor(supervision.ForLas(supervision.LasConfig{})))
	hostPID, err := system.Root.SpawnNamed(props, "tools")
	if err != nil {
		return nil, fault.Errorf(fault.ClassRuntime, "start Las host: %w", err)
	}
	defer func() { _ = system.Root.StopFuture(hostPID).Wait() }()

	// The handshake and the listing each have the MCP deadline; the
	// servers of a servers file have their boot wait, then a margin.
	wait := max(opts.CallTimeout*2, opts.BootTimeout+time.Second)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = time.Until(d)
	}
	res, err := system.Root.RequestFuture(hostPID, awaitTools{}, wait).Result()
	if err != nil {
		// Past the wait: the host says why Las is not ready.
		res, err = system.Root.RequestFuture(hostPID, giveUp{}, 5*time.Second).Result()
		if err != nil {
			return nil, fault.Upstream(fault.ClassMCP, fault.Indeterminate, "Las did not list its tools within the deadline")
		}
	}
	r := res.(listed)
	return r.tools, r.err
}
