package main

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"time"

	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/supervision/fault"
)

// journalCmd prints a family's journal events in time order
// (docs/state.md#reading-the-journal), read-only and safe while `run` runs.
type journalCmd struct {
	StateDir string        `name:"state-dir" env:"SINGULARITY_STATE_DIR" default:".singularity" help:"The root being's state directory."`
	Being    string        `name:"being" help:"Only this being (its name or its own id)."`
	Follow   bool          `name:"follow" short:"f" help:"Keep printing new events until Ctrl-C."`
	Format   string        `name:"format" default:"text" enum:"text,json" help:"Output: text (<time> <being> <type> <fields>) or json (the journal's own objects with being and being_id first)."`
	Poll     time.Duration `name:"poll" default:"200ms" hidden:"" help:"How often --follow looks for new events."`
}

// followed is one being's follower and its place in the family order.
type followed struct {
	being journalview.Being
	order int
	f     *journalview.Follower
}

// entry is one event to print.
type entry struct {
	b *followed
	l journalview.Line
}

func (j *journalCmd) Run(e *env) error {
	fam, err := j.family()
	if err != nil {
		return err
	}
	if j.Being != "" && !slices.ContainsFunc(fam, j.wanted) {
		return fault.Errorf(fault.ClassConfiguration, "no being %q in the family at %s", j.Being, j.StateDir)
	}
	out := bufio.NewWriter(e.stdout)
	seen := map[string]journalview.Being{}
	known := map[string]*followed{}
	var order []*followed
	poll := func() error {
		if len(known) > 0 {
			// Children spawned since the last look (only their
			// state.json is read).
			if fam, err = j.familySeen(seen); err != nil {
				return err
			}
		}
		for _, b := range fam {
			if _, ok := known[b.Dir]; ok || !j.wanted(b) {
				continue
			}
			fb := &followed{being: b, order: len(order), f: journalview.NewFollower(b.Dir)}
			known[b.Dir] = fb
			order = append(order, fb)
		}
		var batch []entry
		for _, fb := range order {
			lines, err := fb.f.Next()
			if err != nil {
				return fault.Errorf(fault.ClassState, "cannot read the journal of %s: %w", fb.being.Name, err)
			}
			for _, l := range lines {
				batch = append(batch, entry{fb, l})
			}
		}
		slices.SortStableFunc(batch, func(a, b entry) int {
			if c := a.l.Head.At.Compare(b.l.Head.At.Time); c != 0 {
				return c
			}
			if c := cmp.Compare(a.b.order, b.b.order); c != 0 {
				return c
			}
			return cmp.Compare(a.l.Head.Seq, b.l.Head.Seq)
		})
		for _, en := range batch {
			j.write(out, en)
		}
		return out.Flush()
	}
	if err := poll(); err != nil {
		return err
	}
	if !j.Follow {
		return nil
	}
	tick := time.NewTicker(max(j.Poll, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return nil
		case <-tick.C:
			if err := poll(); err != nil {
				return err
			}
		}
	}
}

func (j *journalCmd) family() ([]journalview.Being, error) { return j.familySeen(nil) }

func (j *journalCmd) familySeen(seen map[string]journalview.Being) ([]journalview.Being, error) {
	fam, err := journalview.FamilySeen(j.StateDir, seen)
	if err != nil {
		return nil, fault.Errorf(fault.ClassState, "cannot read the family at %s: %w", j.StateDir, err)
	}
	return fam, nil
}

// wanted applies --being.
func (j *journalCmd) wanted(b journalview.Being) bool {
	return j.Being == "" || b.ID == j.Being || b.Name == j.Being
}

func (j *journalCmd) write(w io.Writer, en entry) {
	if j.Format == "json" {
		_, _ = w.Write(journalview.JSON(en.b.being.Name, en.b.being.ID, en.l))
	} else {
		_, _ = io.WriteString(w, journalview.Text(en.b.being.Name, en.l))
	}
	_, _ = io.WriteString(w, "\n")
}
