// Package supervision holds the supervisor strategies of the runtime and the
// events they report: the strategies that restart Las and child-being actors
// with capped backoff, the deciders that read a failure's upstream kind
// (package supervision/fault) to choose between restarting and stopping, and
// the Restarted news a restarted actor hears.
package supervision
