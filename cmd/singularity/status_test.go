package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBeingsAgrees(t *testing.T) {
	for n, want := range map[int]string{0: "0 beings", 1: "1 being", 2: "2 beings", 10001: "10001 beings"} {
		assert.Equal(t, want, beings(n))
	}
}
