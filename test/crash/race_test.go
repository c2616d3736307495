//go:build race

package crash

// Under the race detector (make test) this test process reads journals
// several times slower; the binaries it kills are not instrumented, so
// fewer kills find as much. The time budget decides, from this minimum.
const minSuiteKills = 20
