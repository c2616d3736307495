//go:build !examplelas_pprof

package examplelas

import "errors"

// startCPUProfile refuses: this build does not link runtime/pprof (see
// profile_on.go).
func startCPUProfile(string) (func(), error) {
	return nil, errors.New("cpu_profile needs a build with -tags examplelas_pprof")
}
