package las

import (
	"slices"
	"strings"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/supervision/fault"
)

// basePath is the PATH Las runs with (docs/las.md#spawn).
const basePath = "/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin:/usr/local/bin"

// skarbiecPassThrough names the parent variables handed to Las, when set,
// if surface skarbiec is selected.
var skarbiecPassThrough = []string{
	"SKARBIEC_CAP_POLICY",
	"SKARBIEC_CAP_POLICY_SIG",
	"SKARBIEC_CAP_TRUST_ROOT",
	"SKARBIEC_WORKLOAD_REGISTRY",
	"SKARBIEC_WORKLOAD_REGISTRY_SIG",
	"SKARBIEC_CAP_STATE",
	"SKARBIEC_CAP_SOCKET",
	"SKARBIEC_WORM_RECEIPT_DIR",
	"SKARBIEC_WORM_CHECKPOINT",
	"SKARBIEC_WORM_RECEIPT_COMMAND",
}

// environment is the whole environment of the Las process: nothing from
// the parent except the Skarbiec pass-through. Its errors are permanent
// ClassMCP failures with the exact sentences of docs/las.md#spawn.
func environment(o Options) ([]string, error) {
	o = o.withDefaults()
	if o.server != nil {
		return serverEnvironment(o)
	}
	only := DefaultOnly
	if o.Only != nil {
		only = *o.Only
	}
	env := []string{
		"PATH=" + basePath,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"LAS_ONLY=" + only,
	}
	if o.Skip != nil {
		env = append(env, "LAS_SKIP="+*o.Skip)
	}
	env = append(env,
		"LAS_RELEASE_MANIFEST_FILE="+o.ReleaseManifest,
		"LAS_RELEASE_MANIFEST_SIGNATURE_FILE="+o.ReleaseManifestSignature,
		"LAS_RELEASE_TRUST_STORE_FILE="+o.ReleaseTrustStore,
		"LAS_RELEASE_WATERMARK_FILE="+o.ReleaseWatermark,
	)
	if o.AgentID != "" && !identity.Valid(o.AgentID) {
		return nil, fault.Upstream(fault.ClassMCP, fault.Permanent, "invalid immutable Las agent identity")
	}
	skip := ""
	if o.Skip != nil {
		skip = *o.Skip
	}
	if !surfaceSelected(only, skip, "skarbiec") {
		return env, nil
	}
	if o.AgentID == "" {
		return nil, fault.Upstream(fault.ClassMCP, fault.Permanent, "Skarbiec requires an explicit immutable Las agent identity")
	}
	for _, name := range skarbiecPassThrough {
		if v, ok := o.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env, "SKARBIEC_MCP_AGENT_ID="+o.AgentID), nil
}

// surfaceSelected reports whether Las offers surface under the LAS_ONLY
// and LAS_SKIP comma lists: an empty only-list selects every surface.
func surfaceSelected(only, skip, surface string) bool {
	if list := splitList(only); len(list) > 0 && !slices.Contains(list, surface) {
		return false
	}
	return !slices.Contains(splitList(skip), surface)
}

// splitList splits a comma list, trimming entries and dropping blanks.
func splitList(text string) []string {
	var out []string
	for _, part := range strings.Split(text, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// serverEnvironment is the environment of one stdio server of a servers
// file (docs/las.md#several-mcp-servers): the scrubbed base of
// docs/las.md#spawn, the release pins that are set, the Skarbiec
// pass-through for a server named skarbiec, then the entry's own env
// (which wins over the base).
func serverEnvironment(o Options) ([]string, error) {
	env := []string{"PATH=" + basePath, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	for _, pin := range []struct{ name, value string }{
		{"LAS_RELEASE_MANIFEST_FILE", o.ReleaseManifest},
		{"LAS_RELEASE_MANIFEST_SIGNATURE_FILE", o.ReleaseManifestSignature},
		{"LAS_RELEASE_TRUST_STORE_FILE", o.ReleaseTrustStore},
		{"LAS_RELEASE_WATERMARK_FILE", o.ReleaseWatermark},
	} {
		if pin.value != "" {
			env = append(env, pin.name+"="+pin.value)
		}
	}
	if o.AgentID != "" && !identity.Valid(o.AgentID) {
		return nil, fault.Upstream(fault.ClassMCP, fault.Permanent, "invalid immutable Las agent identity")
	}
	if o.server.Name == "skarbiec" {
		if o.AgentID == "" {
			return nil, fault.Upstream(fault.ClassMCP, fault.Permanent, "Skarbiec requires an explicit immutable Las agent identity")
		}
		for _, name := range skarbiecPassThrough {
			if v, ok := o.LookupEnv(name); ok {
				env = append(env, name+"="+v)
			}
		}
		env = append(env, "SKARBIEC_MCP_AGENT_ID="+o.AgentID)
	}
	// The entry's env replaces a base variable of the same name.
	for _, kv := range o.server.Env {
		name, _, _ := strings.Cut(kv, "=")
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		env = append(env, kv)
	}
	return env, nil
}
