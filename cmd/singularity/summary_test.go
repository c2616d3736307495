package main

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSummaryWithinItsWait: a summary written in time is copied whole;
// one that is not ready by the wait is said in one line, and the end of
// the process does not wait for it.
func TestSummaryWithinItsWait(t *testing.T) {
	var out bytes.Buffer
	e := &env{stderr: &out}
	summarizeWithin(e, "run ended:", time.Minute, func(w io.Writer) { fmt.Fprintln(w, "run ended:\n  Ada: stopped") })
	assert.Equal(t, "run ended:\n  Ada: stopped\n", out.String())

	out.Reset()
	stuck := make(chan struct{})
	defer close(stuck)
	summarizeWithin(e, "run ended on member m1:", time.Millisecond, func(w io.Writer) {
		<-stuck // a family that takes longer to read than the wait
		fmt.Fprintln(w, "never")
	})
	assert.Equal(t, "run ended on member m1: the family was not read within 1ms; singularity status reads it\n", out.String())
}
