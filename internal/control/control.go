// Package control is the operator's channel to a family
// (docs/family.md#the-operators-channel): `singularity fund` and
// `singularity say` as requests, checked, decided and made durable, and
// the relay of a relative's message between the members of a family
// spread over members (docs/cluster.md#messages-between-relatives).
//
// A runtime that holds a family listens on SocketName in its state root
// (Serve); a command asks it (Ask) with one JSON request and reads one
// JSON reply per connection, and the runtime answers only once the
// effect is durable. When no runtime holds the family (no socket, or one
// a killed runtime left behind), the command takes the being's directory
// lock and journals the effect itself (Apply). Both sides decide with
// the same pure functions (Fund, Say) on the being's state, so a fund
// and a message mean the same wherever they are applied.
package control

import (
	"errors"

	"github.com/wisent/singularity/internal/store/money"
)

// SocketName is the control socket's file name in the state root.
const SocketName = "control.sock"

// MemberSocket is the file name of a cluster member's control socket in
// the shared state root: control-<member>.sock, the member's name kept
// to letters, digits, '-', '_' and '.'.
func MemberSocket(member string) string {
	clean := []byte(member)
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			clean[i] = '_'
		}
	}
	return "control-" + string(clean) + ".sock"
}

// MemberSockets is the glob of the members' sockets in a state root.
const MemberSockets = "control-*.sock"

// Operations of a Request.
const (
	OpFund = "fund"
	OpSay  = "say"
	// OpRelay is a relative's message (docs/family.md#messages-between-relatives)
	// that one member of a family spread over members carries to the
	// member holding its receiver: From, Name and Relation say who sent
	// it, Key is its id. Only a member answers it.
	OpRelay = "relay"
)

// Request is one command of the operator. Being is the being's state
// directory relative to the state root, "." for the root (Resolve);
// Key is a fund's idempotency key, or a message's id.
type Request struct {
	Op     string       `json:"op"`
	Being  string       `json:"being"`
	Amount money.Amount `json:"amount,omitzero"`
	Key    string       `json:"key"`
	Note   string       `json:"note,omitempty"`
	Text   string       `json:"text,omitempty"`
	// From, Name and Relation are a relayed message's sender: its id,
	// its name, and its relation to the receiver (parent or child).
	From     string `json:"from,omitempty"`
	Name     string `json:"name,omitempty"`
	Relation string `json:"relation,omitempty"`
}

// Reply is the answer to a Request: the being's name, and for a fund
// the amount applied under Key and what remained right after it (the
// first application's, when the key was applied before: Duplicate). A
// refused request has Refusal set (exit 2, nothing written); a request
// that could not be carried out has Failure set; Busy says the runtime
// is stopping and wrote nothing: the command asks again.
type Reply struct {
	Name      string       `json:"name,omitempty"`
	Key       string       `json:"key,omitempty"`
	Amount    money.Amount `json:"amount,omitzero"`
	Remaining money.Amount `json:"remaining,omitzero"`
	Duplicate bool         `json:"duplicate,omitempty"`
	Refusal   string       `json:"refusal,omitempty"`
	Failure   string       `json:"failure,omitempty"`
	Busy      bool         `json:"busy,omitempty"`
	// NotHere is a cluster member's answer for a being it does not
	// hold: the command asks the other members.
	NotHere bool `json:"not_here,omitempty"`
	// Ended answers a relayed message whose receiver's life ended: it
	// took nothing.
	Ended bool `json:"ended,omitempty"`
}

// ErrRefused marks a request refused for what it asks (an exit-2
// sentence): nothing was written.
var ErrRefused = errors.New("refused")

// ErrNoRuntime is Ask's answer when no runtime listens on the socket:
// the command applies the request itself (Apply).
var ErrNoRuntime = errors.New("no runtime holds the family")

// ErrBusy is a runtime's answer while the being cannot take the request
// yet (it is stopping): the command asks again, within its deadline.
var ErrBusy = errors.New("the being is stopping")
