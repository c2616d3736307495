package fault

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassExitCodesAndPrefixes(t *testing.T) {
	cases := []struct {
		class  Class
		prefix string
		code   int
	}{
		{ClassConfiguration, "configuration", 2},
		{ClassSecret, "secret file", 2},
		{ClassBrama, "brama", 3},
		{ClassMCP, "mcp", 3},
		{ClassMost, "most", 3},
		{ClassCluster, "cluster", 3},
		{ClassState, "state", 4},
		{ClassTool, "tool", 5},
		{ClassRuntime, "runtime", 5},
	}
	for _, c := range cases {
		t.Run(c.prefix, func(t *testing.T) {
			assert.Equal(t, c.prefix, c.class.Prefix())
			assert.Equal(t, c.code, c.class.ExitCode())
			err := New(c.class, "boom")
			assert.Equal(t, c.prefix+": boom", err.Error())
			assert.Equal(t, c.code, ExitCode(fmt.Errorf("outer: %w", err)))
		})
	}
}

func TestErrorfKeepsCause(t *testing.T) {
	err := Upstream(ClassBrama, Transient, "request failed: %w", io.ErrUnexpectedEOF)
	assert.Equal(t, "brama: request failed: unexpected EOF", err.Error())
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF))
	assert.Equal(t, Transient, KindOf(fmt.Errorf("wrapped: %w", err)))
	assert.Equal(t, ClassBrama, ClassOf(err))
}

// pathCause is a cause found with errors.As rather than errors.Is.
type pathCause struct{ path string }

func (p *pathCause) Error() string { return "bad path " + p.path }

func TestErrorfKeepsEveryCause(t *testing.T) {
	errA, errB, errC := errors.New("a failed"), errors.New("b failed"), errors.New("c failed")
	stateErr := New(ClassState, "cannot save state /s/state.json")
	tests := []struct {
		name   string
		err    *Error
		text   string
		causes []error // each must be found by errors.Is
	}{
		{"no cause", Errorf(ClassMCP, "plain %s", "text"), "mcp: plain text", nil},
		{"value, not a cause", Errorf(ClassMCP, "x: %v", errA), "mcp: x: a failed", nil},
		{"one", Errorf(ClassMCP, "x: %w", errA), "mcp: x: a failed", []error{errA}},
		{"two", Errorf(ClassMCP, "%w: %w", errA, errB), "mcp: a failed: b failed", []error{errA, errB}},
		{"three with a value between", Errorf(ClassMCP, "%w, %d, %w (%w)", errA, 7, errB, errC), "mcp: a failed, 7, b failed (c failed)", []error{errA, errB, errC}},
		{"nested join", Errorf(ClassMCP, "x: %w", errors.Join(errA, errB)), "mcp: x: a failed\nb failed", []error{errA, errB}},
		{"upstream", Upstream(ClassMCP, Transient, "%w: %w", errA, errB), "mcp: a failed: b failed", []error{errA, errB}},
		{"same class prints its prefix once", Errorf(ClassState, "save: %w", stateErr), "state: save: cannot save state /s/state.json", []error{stateErr}},
		{"same class among others", Errorf(ClassState, "%w (%w)", errA, stateErr), "state: a failed (cannot save state /s/state.json)", []error{errA, stateErr}},
		{"another class keeps its prefix", Errorf(ClassRuntime, "save: %w", stateErr), "runtime: save: state: cannot save state /s/state.json", []error{stateErr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.text, tt.err.Error())
			for _, c := range tt.causes {
				assert.ErrorIs(t, tt.err, c)
				assert.ErrorIs(t, fmt.Errorf("outer: %w", tt.err), c)
			}
			if tt.causes == nil {
				assert.Nil(t, tt.err.Err)
			}
		})
	}

	as := Errorf(ClassState, "%w and %w", errA, &pathCause{"/x"})
	var pc *pathCause
	require.ErrorAs(t, as, &pc)
	assert.Equal(t, "/x", pc.path)

	inner := Upstream(ClassMCP, Permanent, "inner")
	var found *Error
	require.ErrorAs(t, Errorf(ClassMCP, "outer: %w", inner), &found)
	assert.Equal(t, "outer: inner", found.Msg, "errors.As finds the outermost *Error first")
	assert.Same(t, inner, Errorf(ClassMCP, "outer: %w", inner).Err, "the cause is the error given, not a printing wrapper")

	args := []any{stateErr}
	_ = Errorf(ClassState, "save: %w", args...)
	assert.Same(t, stateErr, args[0], "the caller's arguments are not changed")
}

func TestUnclassifiedIsRuntime(t *testing.T) {
	err := errors.New("plain")
	assert.Equal(t, ClassRuntime, ClassOf(err))
	assert.Equal(t, KindNone, KindOf(err))
	assert.Equal(t, 5, ExitCode(err))
	assert.Equal(t, 0, ExitCode(nil))
}

func TestLineIsOneLine(t *testing.T) {
	assert.Equal(t, "singularity: state: a b", Line(New(ClassState, "a\nb")))
}
