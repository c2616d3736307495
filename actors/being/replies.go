package being

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// What the being waits for besides its own writes comes back as a reply
// of a named kind: an answer of another actor (request), or the result
// of a job on a worker goroutine (work) or on the family's writer pool
// (writerJob). Every wait has a deadline, after which the reply carries
// its error. A reply of work abandoned since (a shutdown, a restart:
// another epoch) is dropped. onReply hands each kind to the method that
// takes it; what that method needs beyond the reply is in the cycle, the
// stop or the boot.

// replyKind names what a reply answers.
type replyKind uint8

const (
	replyCompletion   replyKind = iota // the gateway's completion
	replyModels                        // the gateway's model list (switch_model)
	replyLas                           // a Las tool call
	replyMost                          // a Most tool call
	replyFile                          // a file tool
	replyAdmission                     // the spend limiter's admission
	replyLasCatalog                    // Las's boot catalogue
	replyChildWritten                  // a spawned child's state directory
	replyGrantChild                    // a grant's child, created after a crash
	replyUngranted                     // the removal of directories without a grant
)

// reply is one answer, posted to the being's mailbox.
type reply struct {
	kind  replyKind
	epoch uint64
	res   any
	err   error
}

// askTimeout bounds an ask answered at once (the spend limiter's
// admission), and is the margin Las asks get beyond their MCP deadlines.
const askTimeout = 10 * time.Second

// request sends msg to pid; its answer (or the deadline's error) comes
// back as a reply of kind.
func (b *Being) request(ctx actor.Context, pid *actor.PID, msg any, timeout time.Duration, kind replyKind) {
	epoch := b.epoch
	future := ctx.RequestFuture(pid, msg, timeout)
	ctx.ReenterAfter(future, func(res any, err error) {
		if b.epoch == epoch {
			b.onReply(ctx, reply{kind: kind, epoch: epoch, res: res, err: err})
		}
	})
}

// work runs job on a goroutine of its own; its result comes back as a
// reply of kind within timeout.
func (b *Being) work(ctx actor.Context, kind replyKind, timeout time.Duration, job func() any) {
	epoch := b.epoch
	system := ctx.ActorSystem()
	future := actor.NewFuture(system, timeout)
	go func() { system.Root.Send(future.PID(), job()) }()
	ctx.ReenterAfter(future, func(res any, err error) {
		if b.epoch == epoch {
			b.onReply(ctx, reply{kind: kind, epoch: epoch, res: res, err: err})
		}
	})
}

// writerJob runs job, which writes files, on the family's writer pool;
// its error comes back as a reply of kind (inline: at once).
func (b *Being) writerJob(ctx actor.Context, kind replyKind, job func() error) {
	if b.opts.inline {
		b.onReply(ctx, reply{kind: kind, epoch: b.epoch, err: job()})
		return
	}
	epoch := b.epoch
	system := ctx.ActorSystem()
	future := actor.NewFuture(system, fileTimeout)
	b.opts.Writers.Do(func() { system.Root.Send(future.PID(), jobResult{job()}) })
	ctx.ReenterAfter(future, func(res any, err error) {
		if r, ok := res.(jobResult); ok {
			err = r.err
		}
		if b.epoch == epoch {
			b.onReply(ctx, reply{kind: kind, epoch: epoch, err: err})
		}
	})
}

// jobResult carries a writer job's error through a future.
type jobResult struct{ err error }

// onReply hands a reply to the method that takes its kind.
func (b *Being) onReply(ctx actor.Context, r reply) {
	switch r.kind {
	case replyCompletion:
		b.completionAnswered(ctx, r)
	case replyModels:
		b.modelsAnswered(ctx, r)
	case replyLas:
		b.lasAnswered(ctx, r)
	case replyMost:
		b.mostAnswered(ctx, r)
	case replyFile:
		b.fileAnswered(ctx, r)
	case replyAdmission:
		b.admissionAnswered(ctx, r)
	case replyLasCatalog:
		b.lasCatalogAnswered(ctx, r)
	case replyChildWritten:
		b.childWritten(ctx, r.err)
	case replyGrantChild:
		b.grantChildWritten(ctx, r.err)
	case replyUngranted:
		b.ungrantedRemoved(ctx, r.err)
	}
}

// errText is the text of an ask's failure (see replyError).
func errText(err error, fallback string) string { return replyError(err, fallback).Error() }

// replyError is an ask's failure: err, or fallback when the answer came
// but was not the expected type.
func replyError(err error, fallback string) error {
	if err != nil {
		return err
	}
	return errors.New(fallback)
}
