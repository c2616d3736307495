package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionText(t *testing.T) {
	stamp := func(settings ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(settings); i += 2 {
			out = append(out, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return out
	}
	tests := []struct {
		name         string
		info         *debug.BuildInfo
		rev, at, mod string // what make build embeds
		want         string
	}{
		{"toolchain stamp", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: stamp("vcs", "git", "vcs.revision", "953bafe0123", "vcs.time", "2026-11-30T18:02:11Z", "vcs.modified", "false")}, "", "", "",
			"singularity v1.4.0 (revision 953bafe0123, 2026-11-30T18:02:11Z)"},
		{"modified", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamp("vcs.revision", "abc1234", "vcs.modified", "true")}, "", "", "",
			"singularity (devel) (revision abc1234, modified)"},
		{"no stamp", &debug.BuildInfo{Settings: stamp("-buildvcs", "false")}, "", "", "", "singularity (devel) (revision unknown)"},
		{"no build information", nil, "", "", "", "singularity (devel) (revision unknown)"},
		{"make build with -buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamp("-buildvcs", "false")}, "76d4ea6f00", "2026-12-01T11:02:49+01:00", "",
			"singularity (devel) (revision 76d4ea6f00, 2026-12-01T10:02:49Z)"},
		{"make build wins over the stamp", &debug.BuildInfo{Settings: stamp("vcs.revision", "old", "vcs.modified", "true")}, "new", "not a time", "true",
			"singularity (devel) (revision new, modified, not a time)"},
		{"make build, clean tree", &debug.BuildInfo{Settings: stamp("vcs.revision", "old", "vcs.modified", "true")}, "new", "", "",
			"singularity (devel) (revision new)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, buildOf(tt.info, tt.rev, tt.at, tt.mod).String(), tt.name)
	}
}
