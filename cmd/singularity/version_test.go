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
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: stamp("vcs", "git", "vcs.revision", "953bafe0123", "vcs.time", "2026-11-30T18:02:11Z", "vcs.modified", "false")},
			"singularity v1.4.0 (revision 953bafe0123, 2026-11-30T18:02:11Z)"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamp("vcs.revision", "abc1234", "vcs.modified", "true")},
			"singularity (devel) (revision abc1234, modified)"},
		{debug.BuildInfo{Settings: stamp("-buildvcs", "false")}, "singularity (devel) (revision unknown)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, versionText(&tt.info))
	}
}
