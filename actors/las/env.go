package las

import (
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/supervision"
)

// BasePath is the PATH Las runs with (SPEC §9.1).
const BasePath = "/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin:/usr/local/bin"

// SkarbiecPassThrough names the parent variables handed to Las, when set,
// if surface skarbiec is selected.
var SkarbiecPassThrough = []string{
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

// Environment is the whole environment of the Las process: nothing from
// the parent except the Skarbiec pass-through. Its errors are permanent
// ClassMCP failures with the exact sentences of SPEC §9.1.
func Environment(o Options) ([]string, error) {
	o = o.withDefaults()
	only := DefaultOnly
	if o.Only != nil {
		only = *o.Only
	}
	env := []string{
		"PATH=" + BasePath,
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
	if o.AgentID != "" && !config.ValidIdentifier(o.AgentID) {
		return nil, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "invalid immutable Las agent identity")
	}
	skip := ""
	if o.Skip != nil {
		skip = *o.Skip
	}
	if !(config.Las{Only: only, Skip: skip}).SurfaceSelected("skarbiec") {
		return env, nil
	}
	if o.AgentID == "" {
		return nil, supervision.Upstream(supervision.ClassMCP, supervision.Permanent, "Skarbiec requires an explicit immutable Las agent identity")
	}
	for _, name := range SkarbiecPassThrough {
		if v, ok := o.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env, "SKARBIEC_MCP_AGENT_ID="+o.AgentID), nil
}
