// Package brama talks to the Brama model gateway (docs/brama.md#overview) and
// hosts the family's brama gateway actor.
//
// The Client is the plain HTTP side: it builds the completion body once,
// signs exactly those bytes with the family's HMAC secret, sends them, and
// turns the answer into either a validated Completion or a classified
// supervision error (class ClassBrama; kind permanent, transient or
// indeterminate). Doctor uses the Client directly.
//
// The Gateway is the actor every being of a family sends its
// messages.CompletionRequest to. Each request runs on its own goroutine and
// is answered by message, so one slow completion never delays another and
// the gateway's mailbox stays free for describe requests and new work.
package brama
