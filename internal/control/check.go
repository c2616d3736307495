package control

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/store/money"
)

// Bounds of what the operator may send (docs/money.md#funding,
// docs/family.md#messages).
const (
	// MaxFundPlaces is the most decimal places an amount may be written
	// with.
	MaxFundPlaces = 12
	// MaxKeyBytes is the longest key (or message id).
	MaxKeyBytes = 128
	// MaxTextBytes is the longest message text.
	MaxTextBytes = 8 << 10
)

// MaxFund is the largest amount one fund may add, in USD.
var MaxFund = money.FromInt(1_000_000)

// plainDecimal is an amount as the operator writes it: digits, with an
// optional fraction; no sign, exponent or spaces.
var plainDecimal = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// ParseAmount reads a fund's amount: a plain decimal above 0 and at
// most MaxFund, with at most MaxFundPlaces decimal places. The error
// (ErrRefused) is one sentence.
func ParseAmount(s string) (money.Amount, error) {
	if !plainDecimal.MatchString(s) {
		return money.Zero, refused("the amount %q is not a decimal number of USD (such as 5 or 0.25)", s)
	}
	if _, frac, ok := strings.Cut(s, "."); ok && len(frac) > MaxFundPlaces {
		return money.Zero, refused("the amount %s has %d decimal places; at most %d are accepted", s, len(frac), MaxFundPlaces)
	}
	v, err := money.Parse(s)
	if err != nil {
		return money.Zero, refused("the amount %q is not a decimal number of USD (such as 5 or 0.25)", s)
	}
	if v.Sign() <= 0 {
		return money.Zero, refused("the amount %s is not above 0 USD", s)
	}
	if v.Cmp(MaxFund) > 0 {
		return money.Zero, refused("the amount %s is above the most one fund adds, %s USD", s, MaxFund)
	}
	return v, nil
}

// CheckKey refuses a key (or message id) longer than MaxKeyBytes, or one
// that is not UTF-8 text without control characters.
func CheckKey(key string) error {
	if len(key) > MaxKeyBytes {
		return refused("the key is %d bytes long; at most %d are accepted", len(key), MaxKeyBytes)
	}
	if !utf8.ValidString(key) || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return refused("the key must be UTF-8 text without control characters")
	}
	return nil
}

// CheckText refuses a message that is empty, not UTF-8, or longer than
// MaxTextBytes.
func CheckText(text string) error {
	switch {
	case !utf8.ValidString(text):
		return refused("the message is not UTF-8 text")
	case len(text) > MaxTextBytes:
		return refused("the message is %d bytes long; at most %d are accepted", len(text), MaxTextBytes)
	case strings.TrimSpace(text) == "":
		return refused("the message is empty")
	}
	return nil
}

// NewKey returns a random key for a fund or a message the operator gave
// none for.
func NewKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return hex.EncodeToString(b[:])
}

// Check refuses a request whose fields are out of bounds, before
// anything is read or written.
func (r Request) Check() error {
	if err := CheckKey(r.Key); err != nil {
		return err
	}
	if r.Key == "" {
		return refused("the request has no key")
	}
	switch r.Op {
	case OpFund:
		if r.Amount.Sign() <= 0 || r.Amount.Cmp(MaxFund) > 0 {
			return refused("the amount %s is not above 0 and at most %s USD", r.Amount, MaxFund)
		}
		if len(r.Note) > MaxTextBytes || !utf8.ValidString(r.Note) {
			return refused("the note must be UTF-8 text of at most %d bytes", MaxTextBytes)
		}
	case OpSay:
		return CheckText(r.Text)
	case OpRelay:
		if r.From == "" || r.Relation != "parent" && r.Relation != "child" {
			return refused("a relayed message names its sender and its relation, parent or child")
		}
		return CheckText(r.Text)
	default:
		return refused("unknown operation %q", r.Op)
	}
	return nil
}

// refused is a refusal sentence wrapping ErrRefused.
func refused(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...)}
}

type refusal struct{ sentence string }

func (r *refusal) Error() string { return r.sentence }
func (r *refusal) Unwrap() error { return ErrRefused }
