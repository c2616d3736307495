package metrics

import "github.com/prometheus/client_golang/prometheus"

// Build names the binary serving the metrics.
type Build struct {
	Version   string // the module version, "(devel)" for a local build
	Revision  string // the VCS revision, "unknown" when the binary has none
	GoVersion string // the Go toolchain's version
}

// SetBuild exports singularity_build_info{version,revision,go_version} at
// 1 (docs/debug.md#metrics). The command calls it once, after New.
func (m *Metrics) SetBuild(b Build) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "singularity_build_info",
		Help:        "The binary's version, VCS revision and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "go_version": b.GoVersion},
	})
	g.Set(1)
	m.to.MustRegister(g)
}
