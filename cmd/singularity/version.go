package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/wisent/singularity/internal/metrics"
)

// The revision `make build` embeds with -ldflags -X (docs/configuration.md#commands),
// whatever GOFLAGS says: the toolchain's own VCS stamp is dropped by
// -buildvcs=false. Empty in a binary built otherwise (go install, go
// build), which falls back to the toolchain's stamp.
var (
	revision     string // git rev-parse HEAD
	revisionTime string // git log -1 --format=%cI
	modified     string // "true" when the work tree had changes
)

// build is what a binary knows of how it was built.
type build struct {
	Version  string // the module version, "(devel)" for a local build
	Revision string // the VCS revision; empty when unknown
	Time     string // the revision's commit time, RFC 3339 in UTC; may be empty
	Modified bool   // built from a work tree with changes
	Go       string // the Go toolchain's version
}

// buildInfo reads the build: the module version from the build
// information, the revision from what `make build` embedded, else from
// the toolchain's VCS stamp.
func buildInfo() build {
	info, _ := debug.ReadBuildInfo()
	return buildOf(info, revision, revisionTime, modified)
}

// buildOf is buildInfo over given build information (nil: none) and
// embedded stamps.
func buildOf(info *debug.BuildInfo, rev, at, dirty string) build {
	b := build{Version: "(devel)", Go: runtime.Version()}
	if info != nil {
		if info.Main.Version != "" {
			b.Version = info.Main.Version
		}
		if info.GoVersion != "" {
			b.Go = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if rev != "" {
		b.Revision, b.Time, b.Modified = rev, utc(at), dirty == "true"
	}
	return b
}

// utc is an RFC 3339 time in UTC, as the toolchain stamps vcs.time; text
// that does not parse is kept as it is.
func utc(at string) string {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return at
	}
	return t.UTC().Format(time.RFC3339)
}

// version is what `singularity --version` prints: "singularity <version>
// (revision <rev>[, modified][, <time>])", or "(revision unknown)" for a
// binary built without VCS information or embedded revision; it says so
// rather than guessing.
func version() string { return buildInfo().String() }

func (b build) String() string {
	if b.Revision == "" {
		return fmt.Sprintf("singularity %s (revision unknown)", b.Version)
	}
	detail := "revision " + b.Revision
	if b.Modified {
		detail += ", modified"
	}
	if b.Time != "" {
		detail += ", " + b.Time
	}
	return fmt.Sprintf("singularity %s (%s)", b.Version, detail)
}

// metrics is the build as singularity_build_info labels it.
func (b build) metrics() metrics.Build {
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	return metrics.Build{Version: b.Version, Revision: rev, GoVersion: b.Go}
}
