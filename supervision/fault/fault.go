// Package fault is the runtime's failure vocabulary and nothing else: the
// error classes that decide an operator's one-line message and the process
// exit code, and the upstream kinds (permanent, transient, indeterminate)
// that decide whether a failed actor is restarted. It imports the standard
// library only, so any package may use it, however low it sits.
package fault

import (
	"errors"
	"fmt"
	"slices"
)

// Class names the family of a failure. It fixes both the prefix of the
// one-line error an operator sees and the process exit code
// (docs/configuration.md#exit-codes).
type Class int

// The classes of docs/configuration.md#exit-codes. The zero value is
// ClassRuntime so that an unclassified failure never exits 0 or 2 by
// accident.
const (
	ClassRuntime       Class = iota // "runtime: …", exit 5
	ClassConfiguration              // "configuration: …", exit 2
	ClassSecret                     // "secret file: …", exit 2
	ClassState                      // "state: …", exit 4
	ClassBrama                      // "brama: …", exit 3
	ClassMCP                        // "mcp: …", exit 3
	ClassMost                       // "most: …", exit 3
	ClassTool                       // "tool: …", exit 5
	ClassCluster                    // "cluster: …", exit 3
)

// Prefix is the text an error of this class starts with, without the
// colon.
func (c Class) Prefix() string {
	switch c {
	case ClassConfiguration:
		return "configuration"
	case ClassSecret:
		return "secret file"
	case ClassState:
		return "state"
	case ClassBrama:
		return "brama"
	case ClassMCP:
		return "mcp"
	case ClassMost:
		return "most"
	case ClassTool:
		return "tool"
	case ClassCluster:
		return "cluster"
	default:
		return "runtime"
	}
}

// ExitCode is the process exit status for a failure of this class.
func (c Class) ExitCode() int {
	switch c {
	case ClassConfiguration, ClassSecret:
		return 2
	case ClassBrama, ClassMCP, ClassMost, ClassCluster:
		return 3
	case ClassState:
		return 4
	default:
		return 5
	}
}

func (c Class) String() string { return c.Prefix() }

// Kind says how an upstream failure (Brama, Las, Most) should be treated:
// give up, try again later, or record that the effect is unknown.
type Kind int

const (
	// KindNone marks errors that are not upstream failures.
	KindNone Kind = iota
	// Permanent failures will not go away by retrying (bad signature,
	// malformed completion, protocol mismatch).
	Permanent
	// Transient failures may succeed later (connection refused, 429, 5xx,
	// a completion request another gateway than Brama refused, a Las
	// process that exited).
	Transient
	// Indeterminate failures happened after the request may have been
	// delivered: the remote effect is unknown and must never be replayed.
	Indeterminate
)

func (k Kind) String() string {
	switch k {
	case Permanent:
		return "permanent"
	case Transient:
		return "transient"
	case Indeterminate:
		return "indeterminate"
	default:
		return "none"
	}
}

// Error is a classified failure. Its text is "<prefix>: <message>", the
// exact one-line sentence the docs give; the wrapped cause, when present, is
// reachable with errors.Is and errors.As but is not printed unless the
// message includes it.
type Error struct {
	Class Class
	Kind  Kind
	Msg   string
	// Err is the cause: nil, one error, or the errors.Join of several.
	Err error
}

func (e *Error) Error() string { return e.Class.Prefix() + ": " + e.Msg }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// New returns a classified error with a fixed message.
func New(class Class, msg string) *Error { return &Error{Class: class, Msg: msg} }

// Errorf returns a classified error whose message is formatted like
// fmt.Errorf. Every operand of a %w verb stays reachable with errors.Is
// and errors.As, however many there are (as with errors.Join). An
// operand that is itself an *Error of the same class is printed without
// its prefix, so that the prefix appears once, at the front: wrapping
// "state: cannot save …" as "save: %w" reads "state: save: cannot save …".
func Errorf(class Class, format string, args ...any) *Error {
	args = slices.Clone(args) // the caller's slice is not ours to change
	for i, a := range args {
		if e, ok := a.(*Error); ok && e != nil && e.Class == class {
			args[i] = sameClass{e}
		}
	}
	err := fmt.Errorf(format, args...)
	var causes []error
	switch w := err.(type) {
	case interface{ Unwrap() []error }:
		causes = w.Unwrap()
	case interface{ Unwrap() error }:
		causes = []error{w.Unwrap()}
	}
	for i, c := range causes {
		if s, ok := c.(sameClass); ok {
			causes[i] = s.e
		}
	}
	e := &Error{Class: class, Msg: err.Error()}
	switch len(causes) {
	case 0:
	case 1:
		e.Err = causes[0]
	default:
		e.Err = errors.Join(causes...)
	}
	return e
}

// sameClass prints a classified error without its class prefix, for an
// outer error of the same class that prints the prefix already.
type sameClass struct{ e *Error }

func (s sameClass) Error() string { return s.e.Msg }
func (s sameClass) Unwrap() error { return s.e }

// Upstream returns a classified upstream failure of the given kind.
func Upstream(class Class, kind Kind, format string, args ...any) *Error {
	e := Errorf(class, format, args...)
	e.Kind = kind
	return e
}

// ClassOf reports the class of err: the class of the outermost *Error in
// its chain, or ClassRuntime for anything unclassified.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassRuntime
}

// KindOf reports the upstream kind of err, or KindNone.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindNone
}

// ExitCode is the process exit status for err: 0 for nil, otherwise the
// code of its class.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return ClassOf(err).ExitCode()
}

// Line is the one line main prints for err: "singularity: <error>". Line
// breaks inside the error are folded to spaces so the output stays one
// line.
func Line(err error) string {
	msg := []rune(err.Error())
	for i, r := range msg {
		if r == '\n' || r == '\r' {
			msg[i] = ' '
		}
	}
	return "singularity: " + string(msg)
}
