package metrics

import "github.com/wisent/singularity/internal/observe"

// LasStarted exports the being's restart counter of server at 0 from the
// start of its Las, so that the series exists before the first restart
// (a rate over it then sees the first one).
func (m *Metrics) LasStarted(b observe.Being, server string) {
	m.restarts.WithLabelValues(m.values(m.of(b).label, server)...).Add(0)
}
