package keeper_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/wisent/singularity/internal/keeper"
	"github.com/wisent/singularity/test/testkit"
)

// BenchmarkKeeperStart measures the CPU one keeper costs to start a Las
// (here /bin/true) and end: the dedicated singularity-keeper against the
// runtime's own binary in its las-keeper mode, in one run. A family's
// takeover starts one keeper per being at once (docs/cluster.md#measured).
// cpu-ms/start is the keeper's user and system time with its child's.
func BenchmarkKeeperStart(b *testing.B) {
	for _, k := range []struct{ name, pkg string }{
		{"dedicated", "./cmd/singularity-keeper"},
		{"runtime", "./cmd/singularity"},
	} {
		bin := testkit.Build(b, k.pkg)
		b.Run(k.name, func(b *testing.B) {
			var cpu float64
			for range b.N {
				cmd := exec.Command(bin, keeper.Command, strconv.Itoa(os.Getpid()), "/bin/true")
				if err := cmd.Run(); err != nil {
					b.Fatalf("%s: %v", k.name, err)
				}
				cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			}
			b.ReportMetric(1000*cpu/float64(b.N), "cpu-ms/start")
		})
	}
}

func TestMain(m *testing.M) { testkit.Main(m) }
