package config

import (
	"regexp"
	"strings"
)

// The per-being values of a servers file (docs/las.md#per-being-values):
// each being's MCP servers are started with these placeholders of their
// command, args, env values and cwd replaced by the being's own.
const (
	// BeingDirVar is the being's state directory, absolute.
	BeingDirVar = "SINGULARITY_BEING_DIR"
	// BeingIDVar is the being's id as status and journal name it: its
	// state directory's name.
	BeingIDVar = "SINGULARITY_BEING_ID"
	// WorkspaceVar is the being's workspace, absolute.
	WorkspaceVar = "SINGULARITY_WORKSPACE"
)

// BeingValues are one being's per-being values.
type BeingValues struct {
	Dir, ID, Workspace string
}

// Expand replaces every ${SINGULARITY_BEING_DIR}, ${SINGULARITY_BEING_ID}
// and ${SINGULARITY_WORKSPACE} of s by the being's value; anything else
// is left as written.
func (v BeingValues) Expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return strings.NewReplacer(
		"${"+BeingDirVar+"}", v.Dir,
		"${"+BeingIDVar+"}", v.ID,
		"${"+WorkspaceVar+"}", v.Workspace,
	).Replace(s)
}

// placeholder is a ${SINGULARITY_…} reference of a servers file.
var placeholder = regexp.MustCompile(`\$\{(SINGULARITY_[A-Za-z0-9_]*)\}`)

// unknownPlaceholder is the first ${SINGULARITY_…} of s that names no
// per-being value ("" for none): a misspelt one is refused rather than
// passed to the server as written.
func unknownPlaceholder(s string) string {
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		switch m[1] {
		case BeingDirVar, BeingIDVar, WorkspaceVar:
		default:
			return m[0]
		}
	}
	return ""
}

// hasPlaceholder reports whether s names a per-being value.
func hasPlaceholder(s string) bool { return placeholder.MatchString(s) }
