// Package brama talks to the model gateway (docs/brama.md#overview) — Brama
// itself, or any other OpenAI-compatible server
// (docs/brama.md#other-openai-compatible-gateways) — and hosts the family's
// gateway actor.
//
// The Client is the plain HTTP side: it builds the completion body once,
// authenticates exactly those bytes (Brama's HMAC signature, a bearer key,
// or nothing), sends them, retries what is safe to retry, and turns the
// answer into either a validated Completion (strictly for Brama, leniently
// with warnings for other gateways) or a classified supervision error
// (class ClassBrama; kind permanent, transient or indeterminate). Doctor
// uses the Client directly.
//
// The Gateway is the actor every being of a family sends its
// messages.CompletionRequest to. Each request runs on its own goroutine and
// is answered by message, so one slow completion never delays another and
// the gateway's mailbox stays free for describe requests and new work. The
// answer carries the completion's per-model price when BRAMA_PRICES_FILE
// lists its model.
package brama
