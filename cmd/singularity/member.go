package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/memberlink"
	"github.com/wisent/singularity/actors/membership"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// runMember is `run` as a member of a family across processes
// (docs/cluster.md#members). The member's life is the membership actor's
// (actors/membership): this opens its first session and its showcase,
// spawns the actor on the member's actor system with what builds the
// family (memberFamilies), forwards signals to it as messages, and
// returns its one outcome.
func runMember(e *env, rt config.Runtime, cl config.Cluster) error {
	sigs, stop := notifySignals()
	defer stop()
	session, err := openSession(cl)
	if err != nil {
		return fault.Errorf(fault.ClassCluster, "etcd is unreachable at boot: %w", err)
	}
	log := e.log.With("member", cl.Member)
	show, address, closeShow, err := openShowcase(e, rt, cl)
	if err != nil {
		_ = session.Close()
		return err
	}
	defer closeShow()
	socket := &operatorSocket{done: make(chan struct{})}
	defer socket.close()
	ended := make(chan error, 1)
	pid, err := show.system.Root.SpawnNamed(membership.Props(membership.Config{
		Name: cl.Member, Family: cl.Family, Address: address, Root: rt.StateDir, Spread: cl.Spread,
		Session: session, Dial: sessionConfig(cl), Lease: cl.Lease, Compact: cl.Compact,
		Grace: rt.ShutdownGrace, StopLimit: stopLimit,
		SpendLimited: rt.SpendLimit != nil || rt.FamilySpendLimit != nil, FamilySpendLimit: rt.FamilySpendLimit,
		Families: &memberFamilies{e: e, rt: rt, cl: cl, show: show, log: log, socket: socket},
		Ended:    func(err error) { ended <- err },
		Logger:   log,
	}), "membership")
	if err != nil {
		_ = session.Close()
		return fault.Errorf(fault.ClassRuntime, "spawn the membership: %w", err)
	}
	defer show.system.Root.Stop(pid)
	for {
		select {
		case <-sigs:
			show.system.Root.Send(pid, membership.Signal{})
		case err := <-ended:
			return err
		}
	}
}

// openShowcase starts what the member shows for its whole life: its own
// actor system, served by protoactor-go's remote at --cluster-bind with
// the member's link on it, and its debug endpoint when one is
// configured. It returns the address the link listens on (the bound
// port, if --cluster-bind asked for port 0), which the member record
// carries.
func openShowcase(e *env, rt config.Runtime, cl config.Cluster) (*showcase, string, func(), error) {
	quiet := logging.AtLeast(e.log.With("lib", "protoactor"), slog.LevelWarn)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	show := newShowcase(cl.Member, cl.Family, rt.StateDir, system)
	address, stopRemote, err := memberlink.Serve(system, cl.Bind, show.answer, show.relay)
	if err != nil {
		system.Shutdown()
		return nil, "", nil, fault.Errorf(fault.ClassCluster, "%w", err)
	}
	closeAll := func() {
		stopRemote()
		system.Shutdown()
	}
	if rt.DebugAddr == "" {
		return show, address, closeAll, nil
	}
	dbg := debug.NewServer(debug.ServerConfig{Addr: rt.DebugAddr, AllowRemote: rt.DebugAllowRemote})
	if err := dbg.Serve(show); err != nil {
		closeAll()
		return nil, "", nil, err
	}
	e.log.Info("debug endpoint listening", "url", "http://"+dbg.Addr().String()+"/debug/")
	return show, address, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = dbg.Shutdown(ctx)
		cancel()
		closeAll()
	}, nil
}

func openSession(cl config.Cluster) (*fence.Session, error) {
	return fence.Open(sessionConfig(cl))
}

func sessionConfig(cl config.Cluster) fence.Config {
	return fence.Config{Endpoints: cl.Endpoints, Family: cl.Family, TTL: cl.Lease}
}

// memberFamilies builds a member's family for its membership actor
// (membership.Families): the whole family under the root's lock, or the
// member's share of a spread one, each shown on the member's showcase
// and served control requests while it runs.
type memberFamilies struct {
	e    *env
	rt   config.Runtime
	cl   config.Cluster
	show *showcase
	log  *slog.Logger
	// socket is the member's control socket, opened once it first
	// stands by.
	socket *operatorSocket
}

var _ membership.Families = (*memberFamilies)(nil)

func (f *memberFamilies) FreshRoot() error {
	return member.Fresh(f.rt.StateDir, f.rt.Identity, func() (*state.Being, error) {
		return freshRoot(f.rt), nil
	})
}

func (f *memberFamilies) Whole(session *fence.Session, hold *member.Holding, token uint64, listen membership.Listener) (membership.Family, error) {
	rootOpts, err := rootOptions(f.rt, being.Run, f.e.log)
	if err != nil {
		return membership.Family{}, err
	}
	rootOpts.Placement = hold
	l, err := startFamilyWith(f.e, f.rt, rootOpts, held{member: f.cl.Member, token: token, committed: hold.Committed, show: f.show.hold, listener: listen})
	if err != nil {
		return membership.Family{}, err
	}
	return f.running(session, l, false), nil
}

func (f *memberFamilies) Spread(session *fence.Session, listen membership.Listener, limiter *actor.Props) (membership.Family, error) {
	rootOpts, err := rootOptions(f.rt, being.Run, f.e.log)
	if err != nil {
		return membership.Family{}, err
	}
	by := held{member: f.cl.Member, placed: true, committed: member.CommittedOf(session, f.rt.StateDir), show: f.show.spreadOver(session),
		relay: memberRelay(f.rt.StateDir, f.cl.Member, session, f.show.system, endedIn(session, f.rt.StateDir)), limiter: limiter, listener: listen}
	l, err := startFamilyWith(f.e, f.rt, rootOpts, by)
	if err != nil {
		return membership.Family{}, err
	}
	return f.running(session, l, true), nil
}

// running serves control requests to the family l until its Close,
// which ends it and shows the member standing by again.
func (f *memberFamilies) running(session *fence.Session, l *live, placed bool) membership.Family {
	stop := f.serveControl(session, l, placed)
	return membership.Family{System: l.system, PID: l.family, Close: func() {
		l.close()
		stop()
		f.show.standBy(session)
	}}
}

// StandBy shows the member standing by with session (nil: between
// sessions) and, once it has joined, has its control socket listen.
func (f *memberFamilies) StandBy(session *fence.Session) {
	f.show.standBy(session)
	if session != nil {
		f.socket.open(func() *control.Server { return listenForOperator(f.rt, f.cl, f.show, f.log) })
	}
}

// serveControl carries control requests to the family this member
// holds (placed: its share of a family spread over members) until the
// function it returns is called: those other members relay through its
// link, and those the member's control socket takes (listenForOperator).
// The stop cancels the requests in progress (they answer busy).
func (f *memberFamilies) serveControl(session *fence.Session, l *live, placed bool) (stop func()) {
	r := memberRouter(l, f.rt.StateDir, placed, f.e.secrets, session, f.cl.Lease)
	serving, cancel := context.WithCancel(context.Background())
	var handle control.Handler = func(ctx context.Context, req control.Request) control.Reply {
		ctx, end := context.WithCancel(ctx)
		defer end()
		defer context.AfterFunc(serving, end)()
		return r.handle(ctx, req)
	}
	f.show.relayed.Store(&handle)
	return func() {
		f.show.relayed.Store(nil)
		cancel()
	}
}

// listenForOperator opens the member's control socket in the shared
// state root (docs/cluster.md#the-operators-channel), unless
// --cluster-control-socket is false: nil then, or when it cannot be
// opened. A request for a being this member holds is carried out here
// (serveControl); any other goes through the link to the member that
// holds the being now (forwardToHolder), found through the session the
// member stands by with, so that a standby, or a member on another
// machine than the being's, reaches it too. Between sessions (etcd
// away) the member holds nothing and answers NotHere.
func listenForOperator(rt config.Runtime, cl config.Cluster, show *showcase, log *slog.Logger) *control.Server {
	if cl.NoSocket {
		return nil
	}
	handle := func(ctx context.Context, req control.Request) control.Reply {
		if reply := show.relay(ctx, req); !reply.NotHere {
			return reply
		}
		session := show.session.Load()
		if session == nil {
			return control.Reply{NotHere: true}
		}
		return forwardToHolder(ctx, session, show.system, rt.StateDir, cl.Member, cl.Spread, req)
	}
	ctl, err := listenControl(handle, filepath.Join(rt.StateDir, control.MemberSocket(cl.Member)))
	if err != nil {
		log.Warn("no control socket: fund and say reach this member's beings through another member's socket, or not at all", "err", err)
	}
	return ctl
}

// operatorSocket is a member's control socket for the rest of the
// process's life from the member's first join (the join makes the
// state root, which a refused member never touches). It is opened on a
// goroutine of its own, so the membership actor that asks for it never
// waits on it.
type operatorSocket struct {
	once sync.Once
	done chan struct{} // closed once opened, or once it never will be
	ctl  *control.Server
}

// open opens the socket with listen, the first time only.
func (o *operatorSocket) open(listen func() *control.Server) {
	o.once.Do(func() {
		go func() {
			defer close(o.done)
			o.ctl = listen()
		}()
	})
}

// close closes the socket, once it is open; a socket never opened never
// will be.
func (o *operatorSocket) close() {
	o.once.Do(func() { close(o.done) })
	<-o.done
	if o.ctl != nil {
		o.ctl.Close()
	}
}

// clusterIdentity is the root's identity as its first state.json holds
// it (it never changes), checked against the configuration as a resume
// is.
func clusterIdentity(rt config.Runtime) (state.Identity, error) {
	b, err := state.Load(rt.StateDir)
	if err != nil {
		return state.Identity{}, err
	}
	if b.Identity != rt.Identity.Adopt(b.Identity, rt.IdentityOpen) {
		return state.Identity{}, fault.New(fault.ClassState, "resume identity does not match configuration")
	}
	return b.Identity, nil
}

// summarize ends the member's part of the family with run's summary on
// stderr (docs/cluster.md#the-end-of-a-member), headed "run ended on
// member <name>:", each being read as `singularity status` reads a
// family across processes: by its commit record now in etcd. whole is
// set when the member held the whole family, root its end; otherwise
// dirs are the directories of the beings it held, each a line of its
// own, indented by its depth in the family.
func (f *memberFamilies) Summarize(whole bool, dirs []string, root *messages.FamilyStopped) {
	title := "run ended on member " + f.cl.Member + ":"
	summarizeWithin(f.e, title, summaryWait, func(w io.Writer) {
		say := func(line string) { fmt.Fprintln(w, f.e.secrets.RedactString(line)) }
		ctx, cancel := context.WithTimeout(context.Background(), f.cl.Lease)
		records, err := member.Records(ctx, f.cl.Endpoints, f.cl.Family)
		cancel()
		if err != nil {
			say(title + " the family cannot be read: " + err.Error())
			return
		}
		load := member.Counter(f.rt.StateDir, records)
		var beings []accounts.Being
		if whole {
			fam, err := accounts.ReadWith(f.rt.StateDir, load)
			if err != nil {
				say(title + " the family cannot be read: " + err.Error())
				return
			}
			beings = fam.Beings
		}
		for _, dir := range dirs {
			b, err := accounts.ReadBeing(dir, load)
			if err != nil {
				say(title + " a being it held cannot be read: " + err.Error())
				continue
			}
			b.Depth = depthIn(f.rt.StateDir, dir)
			beings = append(beings, *b)
		}
		if len(beings) == 0 {
			say(title + " it held no being")
			return
		}
		writeEndSummary(w, f.e.secrets, title, beings, root)
	})
}

// depthIn is how deep in the family rooted at root the being living in
// dir is: 0 for the root, 1 for a child (root/children/<id>), and so on.
func depthIn(root, dir string) int {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return 0
	}
	return (strings.Count(filepath.ToSlash(rel), "/") + 1) / 2
}
