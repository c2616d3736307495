//go:build !race

package crash

// minSuiteKills is how many kills the default run makes whatever its
// time budget says.
const minSuiteKills = defaultKills
