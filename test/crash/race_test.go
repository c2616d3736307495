//go:build race

package crash

// Under the race detector (make test) this test process reads journals
// several times slower (the binaries it kills are not instrumented), but
// the suite still runs all of the default kills (docs/family.md asks for
// a few hundred in every run): the time budget only stops a run that
// asked for more.
const minSuiteKills = defaultKills
