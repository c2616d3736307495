// Package las is the Las actor: it owns one MCP session with one server
// of a being (docs/las.md#overview) — the being's Las child process on
// stdio (internal/mcpstdio), or a server of a servers file, on stdio or
// remote over streamable HTTP (internal/mcpremote) — and drives either
// through the same session interface. It runs the handshake and
// tools/list, forwards tool calls under their deadlines, pings for
// liveness, and fails (panics with a classified error) when the session
// breaks so that its supervisor (supervision.ForLas) restarts it with
// backoff. A Group stands for a servers file: one Las per server under
// it.
//
// I/O never blocks the mailbox: the session's requests run on goroutines
// of their own that post what came of them back to the actor (a call's
// goroutine answers its caller), the session's end is posted too, and
// every timer posts a message to the actor. The only waits inside a
// handler are the shutdown ladder (in the stopping handler,
// docs/las.md#shutdown-ladder) and the bounded SIGKILL-and-reap of a
// process that has already failed.
//
// Choices this actor makes (each is described in docs/las.md):
//   - Calls made while Las is (re)starting wait for the new session if it
//     is ready within the call's deadline; otherwise they come back
//     indeterminate ("Las is restarting") without ever being sent. A call
//     whose deadline has passed when it is dequeued is never sent.
//   - A call's deadline passing sends notifications/cancelled, answers
//     indeterminate, and triggers an immediate liveness ping: a hung
//     server is restarted at once, a merely slow tool is not.
//   - A failed process is SIGKILLed at once (its process group), with no
//     grace: the grace ladder is for clean stops.
//   - A required surface missing after list_changed is only a warning
//     (LasSurfaceMissing); after a restart it is also a transient failure,
//     retried under the backoff; at boot it is permanent.
//   - The parent hears LasRestarted when a restarted incarnation starts,
//     LasCatalogChanged after every complete listing (boot included), and
//     LasUnavailable when the actor stops after a failure (permanent, or
//     the supervisor's intensity exceeded).
package las

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/mcpwire"
	"github.com/wisent/singularity/supervision"
)

// DefaultOnly is the LAS_ONLY surface list used when Options.Only is nil; it
// is also the command line's default for LAS_ONLY
// (docs/configuration.md#variables), written only here.
const DefaultOnly = "weles,skarbiec,tama,stado,lem,echo,most,probierz,byk,brama,warsztat,finance"

// Options say how to start and talk to Las. Zero fields take the
// documented defaults.
type Options struct {
	// Command is the interpreter or executable (LAS_COMMAND); a name
	// without a slash is looked up in this process's PATH.
	Command string
	// Entrypoint is its only argument (LAS_MCP_ENTRYPOINT); "" passes none.
	Entrypoint string
	// Only is LAS_ONLY: nil means DefaultOnly; "" means no filter (every
	// surface, skarbiec included). Always passed to Las.
	Only *string
	// Skip is LAS_SKIP: nil means unset (not passed); "" means none
	// (passed empty).
	Skip *string
	// The four release pins, passed to Las as LAS_RELEASE_* as given.
	ReleaseManifest          string
	ReleaseManifestSignature string
	ReleaseTrustStore        string
	ReleaseWatermark         string
	// AgentID is the being's immutable agent id: sent in initialize and,
	// when skarbiec is selected, as SKARBIEC_MCP_AGENT_ID (then required).
	AgentID string
	// RequiredSurfaces must each have at least one "<surface>__" tool.
	RequiredSurfaces []string
	// CallTimeout is the per-request MCP deadline (handshake, listing, and
	// calls that carry no deadline of their own); zero means 120 s.
	CallTimeout time.Duration
	// ShutdownGrace is how long Las may take to exit after its stdin is
	// closed before it is sent SIGTERM; zero means 10 s.
	ShutdownGrace time.Duration
	// TermGrace is how long after SIGTERM before SIGKILL; zero means 2 s.
	TermGrace time.Duration
	// PingInterval spaces liveness pings; zero means 30 s, negative turns
	// the periodic ping off (a LasPingRequest still pings).
	PingInterval time.Duration
	// PingTimeout is the liveness ping deadline; zero means 10 s.
	PingTimeout time.Duration
	// MaxLineBytes bounds one line from Las; zero means 32 MiB.
	MaxLineBytes int
	// ClientVersion is sent as clientInfo.version; "" means "dev".
	ClientVersion string
	// BeingName prefixes Las's stderr lines in the log.
	BeingName string
	// Logger receives the actor's logs and Las's stderr; nil discards.
	Logger *slog.Logger
	// LookupEnv reads the parent environment for the Skarbiec
	// pass-through; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)

	// Servers, when non-empty, are the servers of LAS_SERVERS_FILE
	// (docs/las.md#several-mcp-servers): Props then makes the actor that
	// runs one supervised Las per server and offers their tools as
	// "<server>__<tool>". Nil is the classic single Las above.
	Servers []Server
	// Workspace is the being's workspace, the one root answered to
	// roots/list (docs/las.md#several-mcp-servers); "" declares no roots
	// capability and refuses roots/list like any other request.
	Workspace string
	// OnStderr, when set, receives each line Las writes on stderr,
	// redacted, as it is logged; OnFailure each failure of an
	// incarnation, its redacted sentence. doctor reports a server's last
	// words with them. Both are called from the actor's goroutines and
	// must return at once; nil means none.
	OnStderr  func(line string)
	OnFailure func(reason string)
	// Secrets are redacted from Las's stderr and from failure texts
	// before they are logged; nil redacts nothing.
	Secrets *boundary.Secrets
	// Supervision tunes the restarts of each server under a servers file;
	// the zero value takes the defaults of ForLas.
	Supervision supervision.LasConfig
	// BootTimeout bounds how long the servers of a servers file may take to
	// become ready at boot before the being goes on without the late
	// ones; zero means twice CallTimeout.
	BootTimeout time.Duration

	// Keeper, when set, is an executable that runs the Las keeper when
	// given keeper.Command (the dedicated singularity-keeper, or the
	// runtime's own binary; keeper.Path): Las is started under it,
	// so that no descendant of Las outlives the runtime even when the
	// runtime is SIGKILLed (docs/las.md#leftovers). "" starts Las directly,
	// with SIGKILL as its parent-death signal.
	Keeper string

	// server is set on the Las of one server of a servers file: its
	// environment is the scrubbed base, the release pins when set and the
	// entry's own env; LAS_ONLY and LAS_SKIP select servers instead of
	// being passed.
	server *Server
}

// Server is one MCP server of a servers file. Env entries are
// "NAME=value" (secret values included: they go to the server only).
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     []string
	// SecretEnv names the Env entries read from secret files: ForBeing
	// never expands them.
	SecretEnv map[string]bool
	Dir       string
	// URL, when set, is a remote server over streamable HTTP; Headers go
	// with every request.
	URL     string
	Headers map[string]string
}

// ForBeing is o with expand applied to the command, every argument,
// every env value but the secret ones and the cwd of each server: how a being's servers get
// its per-being values (docs/las.md#per-being-values). o is unchanged.
func (o Options) ForBeing(expand func(string) string) Options {
	servers := make([]Server, len(o.Servers))
	for i, s := range o.Servers {
		s.Command, s.Dir = expand(s.Command), expand(s.Dir)
		s.Args = mapStrings(s.Args, expand)
		s.Env = mapStrings(s.Env, func(kv string) string {
			name, value, _ := strings.Cut(kv, "=")
			if s.SecretEnv[name] {
				return kv
			}
			return name + "=" + expand(value)
		})
		servers[i] = s
	}
	o.Servers = servers
	return o
}

// mapStrings is f of each of in, in a new slice (nil for nil).
func mapStrings(in []string, f func(string) string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// Defaults of docs/configuration.md#variables for the Las options.
const (
	DefaultCallTimeout   = 120 * time.Second
	DefaultShutdownGrace = 10 * time.Second
	DefaultTermGrace     = 2 * time.Second
	DefaultPingInterval  = 30 * time.Second
	DefaultPingTimeout   = 10 * time.Second
)

func (o Options) withDefaults() Options {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.TermGrace <= 0 {
		o.TermGrace = DefaultTermGrace
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = DefaultPingTimeout
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = mcpwire.MaxLineBytes
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.BootTimeout <= 0 {
		o.BootTimeout = 2 * o.CallTimeout
	}
	return o
}

// stderrPrefix starts each logged stderr line of Las: "Ada: las: …", or
// "Ada: las filesystem: …" for a server of a servers file.
func (o Options) stderrPrefix() string {
	if o.server != nil {
		return o.BeingName + ": las " + o.server.Name + ": "
	}
	return o.BeingName + ": las: "
}
