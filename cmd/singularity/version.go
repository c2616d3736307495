package main

import (
	"fmt"
	"runtime/debug"
)

// version is what `singularity --version` prints: the module version and
// the VCS revision the binary was built from, as the Go toolchain stamped
// them (docs/configuration.md#commands). A binary built without VCS
// information says so rather than guessing.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "singularity (unknown version; no build information)"
	}
	return versionText(info)
}

// versionText formats build information: "singularity <version> (revision
// <rev>[, modified], <time>)", or "(revision unknown)" without VCS stamps.
func versionText(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return fmt.Sprintf("singularity %s (revision unknown)", v)
	}
	detail := "revision " + rev
	if modified {
		detail += ", modified"
	}
	if at != "" {
		detail += ", " + at
	}
	return fmt.Sprintf("singularity %s (%s)", v, detail)
}
