package supervision

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
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
