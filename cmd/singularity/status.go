package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/member"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// statusCmd prints a family's tree and ledger from its state directories
// (docs/money.md#singularity-status). It reads and never writes, so it is
// safe while `run` runs.
type statusCmd struct {
	StateDir string `name:"state-dir" env:"SINGULARITY_STATE_DIR" default:".singularity" help:"The root being's state directory."`
	Format   string `name:"format" default:"table" enum:"table,json" help:"Output format: table or json."`
	Etcd     string `name:"cluster-etcd" env:"SINGULARITY_CLUSTER_ETCD" help:"etcd of a family across processes: count only what its commit records say was committed (docs/cluster.md#status)."`
	Family   string `name:"cluster-family" env:"SINGULARITY_CLUSTER_FAMILY" default:"family" help:"The family's name in etcd."`
}

func (s *statusCmd) Run(e *env) error {
	if err := e.checkStateDir(s.StateDir); err != nil {
		return err
	}
	load, err := s.loader(e)
	if err != nil {
		return err
	}
	fam, err := accounts.ReadWith(s.StateDir, load)
	if err != nil {
		return fault.Errorf(fault.ClassState, "%w", err)
	}
	if s.Format == "json" {
		err = writeStatusJSON(e.stdout, fam)
	} else {
		err = writeStatusTable(e.stdout, fam)
	}
	if err != nil {
		return fault.Errorf(fault.ClassRuntime, "status: %w", err)
	}
	if len(fam.Unreadable) > 0 {
		return fault.Errorf(fault.ClassState, "%w", fam.Unreadable[0])
	}
	return nil
}

// loader reads each being of a family across processes as its commit
// record says (nil for a single process's family).
func (s *statusCmd) loader(e *env) (accounts.Loader, error) {
	return clusterLoader(e, s.StateDir, s.Etcd, s.Family)
}

// clusterLoader is how `singularity status` reads each being of the
// family in root when etcd names a family across processes: by the
// commit records as they are now (member.Counter). It is nil without
// etcd: each state directory is read as a single process wrote it.
func clusterLoader(e *env, root, etcd, family string) (accounts.Loader, error) {
	records, err := clusterRecords(e, etcd, family)
	if err != nil || records == nil {
		return nil, err
	}
	return member.Counter(root, records), nil
}

// clusterRecords reads the commit records of the family across
// processes that etcd and family name, as they are now; nil without
// etcd.
func clusterRecords(e *env, etcd, family string) (map[string]fence.Record, error) {
	cl, err := config.LoadCluster(config.ClusterFlags{Etcd: etcd, Family: family, Member: "reader", Bind: "127.0.0.1:0", Lease: "3", Compact: "0"}, os.Hostname)
	if err != nil || !cl.Enabled {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, 2*fence.DefaultDialTimeout)
	defer cancel()
	records, err := member.Records(ctx, cl.Endpoints, cl.Family)
	if err != nil {
		return nil, fault.Errorf(fault.ClassCluster, "%w", err)
	}
	if records == nil {
		records = map[string]fence.Record{}
	}
	return records, nil
}

func spent(b accounts.Being) money.Amount {
	return b.State.Budget.APISpent.Add(b.State.Budget.InstanceSpent)
}

func lastAction(b accounts.Being) string {
	acts := b.State.RecentActions
	if len(acts) == 0 {
		return "-"
	}
	a := acts[len(acts)-1]
	return a.Tool + ":" + a.Status
}

// ledgerWord is a being's own ledger: exact, or off by how much (against
// its journal, or against its own figures).
func ledgerWord(b accounts.Being) string {
	if b.Journal != nil {
		return "not exact: " + b.Journal.Error()
	}
	if off := b.JournalOff; off.Sign() != 0 {
		return "off by " + off.String()
	}
	if off := b.Entry.Off(); off.Sign() != 0 {
		return "off by " + off.String()
	}
	return "exact"
}

func writeStatusTable(w io.Writer, fam *accounts.Family) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tCYCLE\tREMAINING\tSPENT\tEARNED\tGRANTED\tFUNDED\tLEDGER\tLAST ACTION\tUPDATED")
	for _, b := range fam.Beings {
		st := b.State
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			strings.Repeat("  ", b.Depth), b.Name, statusWord(st), st.Cycle, st.Budget.Remaining, spent(b),
			st.Budget.Earned, st.Budget.Granted, st.Budget.Funded, ledgerWord(b), lastAction(b), st.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ended := false
	for _, b := range fam.Beings {
		if b.State.StatusReason == "" {
			continue
		}
		if !ended {
			fmt.Fprintln(w, "\nwhy lives ended:")
			ended = true
		}
		fmt.Fprintf(w, "  %s %s: %s%s\n", b.Name, b.State.Status, b.State.StatusReason, unjournaled(b))
	}
	t := fam.Totals
	fmt.Fprintf(w, "\nfamily: %s, starting %s, granted %s, spent %s, earned %s, remaining %s",
		beings(t.Beings), t.Starting, t.Granted, t.Spent, t.Earned, t.Remaining)
	if t.Funded.Sign() != 0 {
		fmt.Fprintf(w, ", funded %s", t.Funded)
	}
	if t.InTransit.Sign() != 0 {
		fmt.Fprintf(w, ", in transit %s", t.InTransit)
	}
	fmt.Fprintln(w)
	_, err := fmt.Fprintln(w, "family ledger: "+fam.Verdict())
	return err
}

// unjournaled marks an end that is the being's last words, not its
// journal's (docs/state.md#last-words).
func unjournaled(b accounts.Being) string {
	if b.LastWords {
		return " " + journalview.NotJournaled
	}
	return ""
}

// statusWord is a being's status, with its sleep and the survival tier
// it lives in (docs/money.md#survival-tiers): "running, tier 2",
// "sleeping until 2026-12-07T22:00:00Z".
func statusWord(st *state.Being) string {
	word := st.Status
	switch {
	case st.Sleep == nil:
	case word == state.StatusRunning:
		// docs/family.md#sleep: a running being that sleeps is shown
		// sleeping; a stopped one sleeps on once resumed.
		word = st.Sleep.String()
	case word == state.StatusStopped:
		word += ", " + st.Sleep.String()
	}
	if st.Tier > 0 {
		return fmt.Sprintf("%s, tier %d", word, st.Tier)
	}
	return word
}

// beings counts beings in words: "1 being", "4 beings".
func beings(n int) string {
	if n == 1 {
		return "1 being"
	}
	return fmt.Sprintf("%d beings", n)
}

// statusBeing is one being in the JSON form; money is exact decimal text.
type statusBeing struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Depth     int    `json:"depth"`
	StateDir  string `json:"state_dir"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	LastWords bool   `json:"last_words"`
	// SleepingUntil is when its sleep ends (RFC 3339), absent when it
	// does not sleep (docs/family.md#sleep).
	SleepingUntil string `json:"sleeping_until,omitempty"`
	Tier          int    `json:"tier"`
	Cycle         uint64 `json:"cycle"`
	Starting      string `json:"starting"`
	Remaining     string `json:"remaining"`
	Spent         string `json:"spent"`
	Earned        string `json:"earned"`
	Granted       string `json:"granted"`
	Funded        string `json:"funded"`
	InTransit     string `json:"in_transit"`
	Ledger        string `json:"ledger"`
	LastAction    string `json:"last_action"`
	Updated       string `json:"updated"`
}

type statusTotals struct {
	Beings    int    `json:"beings"`
	Starting  string `json:"starting"`
	Granted   string `json:"granted"`
	Spent     string `json:"spent"`
	Earned    string `json:"earned"`
	Funded    string `json:"funded"`
	Remaining string `json:"remaining"`
	InTransit string `json:"in_transit"`
	Off       string `json:"off"`
}

func writeStatusJSON(w io.Writer, fam *accounts.Family) error {
	out := struct {
		Beings       []statusBeing `json:"beings"`
		Totals       statusTotals  `json:"totals"`
		FamilyLedger string        `json:"family_ledger"`
		Unreadable   []string      `json:"unreadable"`
	}{Beings: []statusBeing{}, Unreadable: []string{}}
	for _, b := range fam.Beings {
		st := b.State
		last := lastAction(b)
		if last == "-" {
			last = ""
		}
		out.Beings = append(out.Beings, statusBeing{
			ID: b.ID, Name: b.Name, Depth: b.Depth, StateDir: b.StateDir, Status: st.Status, Reason: st.StatusReason, LastWords: b.LastWords, Tier: st.Tier, Cycle: st.Cycle,
			Starting: st.Budget.Starting.String(), Remaining: st.Budget.Remaining.String(), Spent: spent(b).String(),
			Earned: st.Budget.Earned.String(), Granted: st.Budget.Granted.String(), Funded: st.Budget.Funded.String(), InTransit: b.Entry.InTransit.String(),
			Ledger: ledgerWord(b), LastAction: last, Updated: st.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000000Z"),
		})
		if st.Sleep != nil {
			out.Beings[len(out.Beings)-1].SleepingUntil = st.Sleep.Until.UTC().Format(time.RFC3339)
		}
	}
	t := fam.Totals
	out.Totals = statusTotals{Beings: t.Beings, Starting: t.Starting.String(), Granted: t.Granted.String(), Spent: t.Spent.String(),
		Earned: t.Earned.String(), Funded: t.Funded.String(), Remaining: t.Remaining.String(), InTransit: t.InTransit.String(), Off: t.Off.String()}
	out.FamilyLedger = fam.Verdict()
	for _, err := range fam.Unreadable {
		// Each is "child <name>: <why>", without the class's prefix.
		text := err.Error()
		if fe, ok := errors.AsType[*fault.Error](err); ok {
			text = fe.Msg
		}
		out.Unreadable = append(out.Unreadable, text)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
