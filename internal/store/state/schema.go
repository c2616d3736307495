// Package state is the durable record of one being: the being-v1 schema
// of state.json (the checkpoint) and its atomic save, the activity
// journal (the write-ahead log) and the rule that applies its events, and
// the conversation archive (docs/state.md#the-state-directory). Exactly
// one actor, the being's own, decides what a given state directory gets;
// the family's writer pool (Writers) does the writing for it.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// SchemaVersion is the only state schema this runtime reads and writes.
const SchemaVersion = "being-v1"

// Being statuses.
const (
	StatusStarting  = "starting"
	StatusRunning   = "running"
	StatusStopping  = "stopping"
	StatusStopped   = "stopped"
	StatusExhausted = "exhausted"
	StatusFailed    = "failed"
)

// Being is the whole of state.json. Fields the reference runtime defines
// are all present; Extra keeps any top-level field this version does not
// know so a load-then-save never drops data. Saving writes the known
// fields in schema order, then the extra ones in key order; nil slices
// are written as [] so readers never see null where a list belongs.
type Being struct {
	SchemaVersion    string           `json:"schema_version"`
	Identity         Identity         `json:"identity"`
	Mind             Mind             `json:"mind"`
	Status           string           `json:"status"`
	Cycle            uint64           `json:"cycle"`
	Budget           Budget           `json:"budget"`
	Conversation     []chat.Message   `json:"conversation"`
	RecentActions    []Action         `json:"recent_actions"`
	CreatedResources CreatedResources `json:"created_resources"`
	StartedAt        Time             `json:"started_at"`
	UpdatedAt        Time             `json:"updated_at"`
	// JournalSeq is the seq of the last journal event this checkpoint
	// includes; nil in a state written by the reference, which covers
	// its whole journal (docs/state.md#resume-and-recovery).
	JournalSeq *uint64 `json:"journal_seq,omitempty"`
	// Grants are the endowments this being granted whose child is not
	// recorded yet (docs/money.md#funded-children): the boot completes
	// each one, exactly once. A child_added for the grant's child ends it.
	Grants []Grant `json:"pending_grants,omitempty"`
	// Tier is the survival tier the being lives in (1-based position in
	// SINGULARITY_TIERS_FILE, docs/money.md#survival-tiers); 0, and
	// absent, for none.
	Tier int `json:"tier,omitempty"`
	// StatusReason is why the being's life ended, as its last stopped
	// event says (docs/state.md#steps): for exhausted the balance and the
	// reserve it could not pay, for failed the error's sentence; absent
	// while it lives and in a state written before it.
	StatusReason string `json:"status_reason,omitempty"`

	// Funds are the funds applied to this being, one per key, in order
	// (docs/money.md#funding): a key seen again is not applied twice.
	Funds []Fund `json:"funds,omitempty"`
	// Inbox holds the messages received and not yet carried by an
	// answered framing (docs/family.md#messages); Received the id of every
	// message ever received, so that a message sent again is dropped.
	Inbox    []InMessage `json:"inbox,omitempty"`
	Received []string    `json:"received_messages,omitempty"`
	// Framed are the ids of the inbox messages the last framing carried
	// while the model has not answered it: they leave the inbox with its
	// first completion, and a framing that replaces it unanswered carries
	// them again. Absent means none.
	Framed []string `json:"framed_messages,omitempty"`
	// Outbox holds the messages this being sent whose receiver has not
	// journaled them yet; they are sent again after a restart.
	Outbox []OutMessage `json:"outbox,omitempty"`
	// Sleep is the sleep the being is in, nil when awake
	// (docs/family.md#sleep).
	Sleep *Sleep `json:"sleep,omitempty"`

	// Extra holds unknown top-level fields of a loaded state.json, verbatim.
	// Keys that name a known field are ignored on save.
	Extra map[string]json.RawMessage `json:"-"`

	// Encoded is the conversation while it is held encoded (HoldEncoded);
	// Conversation is then empty, and a save writes these messages in its
	// place, byte for byte as Conversation would have been written.
	Encoded Encoded `json:"-"`
	held    bool
	arena   []byte // the chunk new encoded messages are packed into
}

// beingFields is Being without its JSON methods.
type beingFields Being

// knownKeys are the JSON names of Being's declared fields.
var knownKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[beingFields]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// MarshalJSON writes the known fields, then Extra.
func (b Being) MarshalJSON() ([]byte, error) {
	f := beingFields(b)
	f.Mind.Rules = nonNil(f.Mind.Rules)
	f.Mind.Learnings = nonNil(f.Mind.Learnings)
	f.Mind.Memories = nonNil(f.Mind.Memories)
	f.Mind.Children = nonNil(f.Mind.Children)
	f.Conversation = nonNil(f.Conversation)
	f.RecentActions = nonNil(f.RecentActions)
	f.CreatedResources.ChatIDs = nonNil(f.CreatedResources.ChatIDs)
	f.CreatedResources.MessageIDs = nonNil(f.CreatedResources.MessageIDs)
	known, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	if b.held && len(b.Encoded) > 0 {
		if known, err = spliceEncoded(known, b.Encoded); err != nil {
			return nil, err
		}
	}
	extra := make([]string, 0, len(b.Extra))
	for k := range b.Extra {
		if !knownKeys[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return known, nil
	}
	slices.Sort(extra)
	var buf bytes.Buffer
	buf.Grow(len(known) + 64*len(extra))
	buf.Write(known[:len(known)-1]) // drop the closing brace
	for _, k := range extra {
		key, _ := json.Marshal(k)
		var val bytes.Buffer
		if err := json.Compact(&val, b.Extra[k]); err != nil {
			return nil, fmt.Errorf("extra field %s: %w", key, err)
		}
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val.Bytes())
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the known fields and keeps the others in Extra.
func (b *Being) UnmarshalJSON(data []byte) error {
	_, err := b.decode(data)
	return err
}

// decode is UnmarshalJSON in one validating pass of encoding/json plus
// one scan of the top level (for the keys Extra keeps), where decoding
// into a map as well would take two more. It reports whether data has
// a schema_version key.
func (b *Being) decode(data []byte) (versioned bool, err error) {
	var f beingFields
	if err := json.Unmarshal(data, &f); err != nil {
		return false, err
	}
	var extra map[string]json.RawMessage
	err = topLevel(data, func(key string, raw []byte) {
		if key == "schema_version" {
			versioned = true
		}
		if knownKeys[key] {
			return
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[key] = bytes.Clone(raw)
	})
	if err != nil {
		return false, err
	}
	f.Extra = extra
	*b = Being(f)
	return versioned, nil
}

// topLevel calls fn with each key of the JSON object data and the raw
// bytes of its value, in order. data must be valid JSON (topLevel runs
// after encoding/json has accepted it); anything but an object is an
// error.
func topLevel(data []byte, fn func(key string, raw []byte)) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errors.New("state is not a JSON object")
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		end := skipString(data, i)
		key := string(data[i+1 : end-1])
		if bytes.IndexByte(data[i:end], '\\') >= 0 {
			if err := json.Unmarshal(data[i:end], &key); err != nil {
				return err
			}
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		start := i
		i = skipValue(data, i)
		fn(key, data[start:i])
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the value starting at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // a number, true, false or null
		for i < len(data) && !strings.ContainsRune(",}] \t\n\r", rune(data[i])) {
			i++
		}
		return i
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Identity is fixed at boot from configuration and never changed by the
// model (docs/state.md#identity).
type Identity struct {
	AgentID           string `json:"agent_id"`
	Name              string `json:"name"`
	Ticker            string `json:"ticker"`
	AgentType         string `json:"agent_type"`
	Specialty         string `json:"specialty"`
	Role              string `json:"role"`
	Environment       string `json:"environment"`
	Host              string `json:"host"`
	WorkloadID        string `json:"workload_id"`
	WorkloadPublicKey string `json:"workload_public_key"`
	ExecutableDigest  string `json:"executable_digest"`
	CodeDigest        string `json:"code_digest"`
	PolicyDigest      string `json:"policy_digest"`
	PolicySequence    uint64 `json:"policy_sequence"`
}

// Mind is what the being may change about itself.
type Mind struct {
	SystemPrompt string   `json:"system_prompt"`
	Rules        []string `json:"rules"`
	Learnings    []string `json:"learnings"`
	Memories     []Memory `json:"memories"`
	Children     []Child  `json:"children"`
	CurrentModel string   `json:"current_model"`
}

// Memory is one persistent memory.
type Memory struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	CreatedAt Time   `json:"created_at"`
}

// Child is the parent's record of a spawned child being. The child's own
// state.json is the authority on its later life.
type Child struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Ticker    string `json:"ticker"`
	StateDir  string `json:"state_dir"`
	CreatedAt Time   `json:"created_at"`
	Status    string `json:"status"`
	// Specialty is the child's specialty (absent in the reference's
	// records); a grant carries it so the child can be created from it.
	Specialty string `json:"specialty,omitempty"`
	// Endowment is what the child was granted; absent for a child whose
	// balance was minted (docs/money.md#funded-children).
	Endowment *money.Amount `json:"endowment,omitempty"`
}

// Grant is an endowment moved to a child: the child it created (or is
// to create) and the amount, which becomes the child's starting balance.
type Grant struct {
	Child  Child        `json:"child"`
	Amount money.Amount `json:"amount"`
}

// Fund is one applied fund: its key, its amount, and what remained
// right after it, which a repeated fund of the same key reports.
type Fund struct {
	Key       string       `json:"key"`
	Amount    money.Amount `json:"amount"`
	Remaining money.Amount `json:"remaining"`
}

// FromOperator is the From of a message the operator sent
// (`singularity say`).
const FromOperator = "operator"

// InMessage is a received message: its id, who sent it (From is
// "operator" or the sender being's id; Name is the sender's name and
// Relation "parent" or "child" for a relative), and its text.
type InMessage struct {
	ID       string `json:"id"`
	From     string `json:"from"`
	Name     string `json:"name,omitempty"`
	Relation string `json:"relation,omitempty"`
	Text     string `json:"text"`
}

// OutMessage is a sent message not yet delivered: its id, the receiver's
// id and the text.
type OutMessage struct {
	ID   string `json:"id"`
	To   string `json:"to"`
	Text string `json:"text"`
}

// Sleep is a being's sleep: no completion is requested before Until,
// unless WakeOnMessage and a message or a fund arrives.
type Sleep struct {
	Until         Time `json:"until"`
	WakeOnMessage bool `json:"wake_on_message"`
}

// String is how status, the debug tree and the page show the sleep:
// "sleeping until <RFC 3339 time>", in UTC to the second.
func (s Sleep) String() string {
	return "sleeping until " + s.Until.UTC().Format(time.RFC3339)
}

// Budget is the ledger as persisted; money fields are decimal strings.
type Budget struct {
	Starting      money.Amount `json:"starting"`
	Remaining     money.Amount `json:"remaining"`
	APISpent      money.Amount `json:"api_spent"`
	InstanceSpent money.Amount `json:"instance_spent"`
	TotalTokens   uint64       `json:"total_tokens"`
	Earned        money.Amount `json:"earned"`
	// Granted is what this being endowed its children with
	// (docs/money.md#funded-children); absent in the reference's state.
	Granted money.Amount `json:"granted,omitzero"`
	// Funded is what came to this being from outside the family
	// (docs/money.md#funding); absent, meaning 0, in older states.
	Funded money.Amount `json:"funded,omitzero"`
}

// NetProfit is earned − api_spent − instance_spent.
func (b Budget) NetProfit() money.Amount {
	return b.Earned.Sub(b.APISpent).Sub(b.InstanceSpent)
}

// Action records one tool call's outcome; the last 100 are kept.
type Action struct {
	Cycle  uint64 `json:"cycle"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	At     Time   `json:"at"`
}

// CreatedResources lists Most chats and messages this being created.
type CreatedResources struct {
	ChatIDs    []string `json:"chat_ids"`
	MessageIDs []string `json:"message_ids"`
}

// Time is a UTC instant written as RFC 3339 with fractional seconds.
type Time struct{ time.Time }

// TimeLayout is how every timestamp in state and the journal is written.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Now returns the current instant in UTC.
func Now() Time { return Time{time.Now().UTC()} }

// MarshalJSON writes the instant in UTC with microseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, len(TimeLayout)+2)), nil
}

// appendJSON appends the instant as MarshalJSON writes it.
func (t Time) appendJSON(dst []byte) []byte {
	// The layout holds nothing JSON would escape.
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, TimeLayout)
	return append(dst, '"')
}

// UnmarshalJSON accepts any RFC 3339 instant.
func (t *Time) UnmarshalJSON(data []byte) error {
	var s string
	if n := len(data); n >= 2 && data[0] == '"' && data[n-1] == '"' && bytes.IndexByte(data, '\\') < 0 {
		// A string with no escape is its bytes (encoding/json has
		// already checked the document): a full mind has a thousand
		// instants to read, and json.Unmarshal is most of their cost.
		s = string(data[1 : n-1])
	} else if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v.UTC()
	return nil
}
