package certify

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/certify/modelseq"
	"github.com/fencecheck/fencecheck/contract"
	"github.com/fencecheck/fencecheck/fencemodel"
)

// The durability profile restarts the sink twice, once gracefully
// (Config.Restart) and once with SIGKILL (Config.Kill). Before each, it
// writes hundreds of records with idempotency keys, each by a newer leader,
// and then raises the floor with a fence alone; after it, the floor, every
// record and every key must still be there. A check only passes when there
// is proof that the sink went away: it was unreachable in between, or the
// instance id it reports (contract.HeaderInstanceID) changed.

// Restart modes, the suffix of the durability check names.
const (
	modeRestart = "restart"
	modeKill    = "kill"
)

// durableRecords is how many records (each with its idempotency key) are
// written before each restart.
const durableRecords = 200

type durableRec struct {
	key, value, idem string
	epoch            uint64
}

// durableSetup is what was written before one restart, and how it went.
type durableSetup struct {
	err   error
	ex    []Exchange
	floor uint64 // raised by a fence alone, above every committed epoch
	recs  []durableRec
	// refused is a keyed write refused as stale after the fence (nil if
	// the sink did not refuse it: core reports that): its key must still
	// be free after the restart.
	refused *durableRec
	// model is the contract's model of what the setup wrote (the fillers'
	// keys aside): the answers to the retries after the restart are its.
	model fencemodel.State
	proof string // why we believe the sink restarted; "" for no proof
}

// durable runs the setup and the restart of one mode once per run.
func (s *session) durable(mode string) *durableSetup {
	if d := s.shared.durable[mode]; d != nil {
		return d
	}
	d := &durableSetup{}
	if s.shared.durable == nil {
		s.shared.durable = map[string]*durableSetup{}
	}
	s.shared.durable[mode] = d
	saved, savedName := s.ex, s.name
	s.ex, s.name = nil, "durability-"+mode
	defer func() { d.ex = s.ex; s.ex, s.name = saved, savedName }()

	run := s.cfg.Restart
	if mode == modeKill {
		run = s.cfg.Kill
	}
	if run == nil {
		d.err = inconclusive("no %s command given (--%s-cmd): this mode was not tried", mode, mode)
		return d
	}
	if err := s.writeBeforeRestart(d); err != nil {
		d.err = fmt.Errorf("setup before the %s failed: %w", mode, err)
		return d
	}
	d.proof, d.err = s.restartWithProof(mode, run)
	return d
}

// writeBeforeRestart commits durableRecords records, each by a newer
// leader (so a sink that refuses equal epochs still takes them), then
// fences alone to a floor no write used, and checks the floor is there
// before the restart (if not, the fence is broken, which core reports).
func (s *session) writeBeforeRestart(d *durableSetup) error {
	e, err := s.base()
	if err != nil {
		return err
	}
	d.model = fencemodel.Start(e - 1)
	for i := range durableRecords {
		r := durableRec{key: s.key(), value: s.value(), idem: s.idem(), epoch: e + uint64(i)}
		if err := s.putOK(r.key, r.value, r.epoch, r.idem); err != nil {
			return err
		}
		d.recs = append(d.recs, r)
		_, d.model = fencemodel.Expect(d.model, fencemodel.Input{Kind: fencemodel.Put, Key: r.key, Value: r.value, Epoch: r.epoch, Idem: r.idem})
	}
	d.floor = e + durableRecords + 10
	if err := s.fenceOK(d.floor); err != nil {
		return err
	}
	_, d.model = fencemodel.Expect(d.model, fencemodel.Input{Kind: fencemodel.Fence, Epoch: d.floor})
	if err := s.floorAtLeast(d.floor); err != nil {
		return inconclusive("the fence did not raise the floor even before the restart (core/fence-raises-floor reports it): %v", err)
	}
	r := durableRec{key: s.key(), value: s.value(), idem: s.idem(), epoch: d.floor - 1}
	wr, rep, err := s.put(r.key, r.value, r.epoch, r.idem)
	if err != nil {
		return fmt.Errorf("PUT %s at epoch %d: %w", r.key, r.epoch, err)
	}
	if rep.Status == http.StatusConflict && wr.Result == contract.ResultRejectStale {
		d.refused = &r
	}
	return nil
}

// instanceID reads the sink's instance id ("" when it sends none).
func (s *session) instanceID(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.SinkURL+contract.PathFence, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: status %d", contract.PathFence, resp.StatusCode)
	}
	return resp.Header.Get(contract.HeaderInstanceID), nil
}

// pollInterval is how often the sink is probed while it restarts.
const pollInterval = 20 * time.Millisecond

// restartWithProof runs the restart command while probing the sink, waits
// until it answers again, and says what proves it went away ("" if
// nothing does).
func (s *session) restartWithProof(mode string, run func(context.Context) error) (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RestartTimeout)
	defer cancel()
	before, err := s.instanceID(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the instance id before the %s: %w", mode, err)
	}
	fmt.Fprintf(s.cfg.Progress, "...  %s of the sink (deadline %s)\n", mode, s.cfg.RestartTimeout)

	// probe until the command returns: any failed probe proves the sink
	// was down at some point.
	var down string
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
		for {
			if _, err := s.instanceID(ctx); err != nil && down == "" && ctx.Err() == nil {
				down = err.Error()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	err = run(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		return "", fmt.Errorf("%s command failed: %w", mode, err)
	}
	after, err := s.waitAnswering(ctx)
	if err != nil {
		return "", err
	}
	if after.down != "" && down == "" {
		down = after.down
	}
	fmt.Fprintf(s.cfg.Progress, "...  sink answers again\n")
	switch {
	case after.id != "" && after.id != before:
		return fmt.Sprintf("its instance id changed from %s to %s", quote(before, 80), quote(after.id, 80)), nil
	case down != "":
		return "it was unreachable in between (" + quote(down, 200) + ")", nil
	}
	return "", nil
}

type answering struct{ id, down string }

// waitAnswering polls until the sink answers GET /v1/fence with 200 or the
// deadline passes; it returns the instance id and the first failed probe.
func (s *session) waitAnswering(ctx context.Context) (answering, error) {
	var a answering
	tick := time.NewTicker(pollInterval * 10)
	defer tick.Stop()
	for {
		id, err := s.instanceID(ctx)
		if err == nil {
			a.id = id
			return a, nil
		}
		if a.down == "" {
			a.down = err.Error()
		}
		select {
		case <-ctx.Done():
			return a, fmt.Errorf("the sink did not answer GET /v1/fence within %s after the restart (last: %s)", s.cfg.RestartTimeout, err)
		case <-tick.C:
		}
	}
}

// afterRestart runs a durability check after the mode's shared setup. A
// failure stands on its own; a pass needs proof that the sink went away.
func afterRestart(s *session, mode string, check func(d *durableSetup) error) error {
	d := s.durable(mode)
	if d.err != nil {
		s.ex = append(d.ex, s.ex...)
		return d.err
	}
	if err := check(d); err != nil {
		return err
	}
	if d.proof == "" {
		return inconclusive("everything survived, but nothing shows the sink went away: it answered every probe during the %s command and reports no %s, or the same one (is the command doing anything?)", mode, contract.HeaderInstanceID)
	}
	return nil
}

func checkFloorSurvives(mode string) func(*session) error {
	return func(s *session) error {
		return afterRestart(s, mode, func(d *durableSetup) error {
			k := s.key()
			return all(
				func() error { return s.floorAtLeast(d.floor) },
				func() error { return s.putStale(k, s.v("stale"), d.floor-1, "", d.floor) },
				func() error { return s.absent(k) },
			)
		})
	}
}

func checkRecordsSurvive(mode string) func(*session) error {
	return func(s *session) error {
		return afterRestart(s, mode, func(d *durableSetup) error {
			for i, r := range d.recs {
				if err := s.recordIs(r.key, r.value, r.epoch); err != nil {
					return fmt.Errorf("record %d of %d acknowledged before the %s: %w", i+1, len(d.recs), mode, err)
				}
			}
			return nil
		})
	}
}

// checkIdemSurvives retries every write committed before the restart,
// each differing from it in one allowed way (the same request, at the
// floor the takeover raised, at a lower epoch, with another value), and
// the write refused before it, by a newer leader: every answer is the
// model's (OK_DUP with the first epoch, 422, and a commit for the refused
// one).
func checkIdemSurvives(mode string) func(*session) error {
	return func(s *session) error {
		return afterRestart(s, mode, func(d *durableSetup) error {
			st := d.model
			for i, r := range d.recs {
				req, how := modelseq.Request{Kind: fencemodel.Put, Key: r.key, Value: r.value, Idem: r.idem, Epoch: r.epoch}, "the same request"
				switch i % 4 {
				case 1:
					req.Epoch, how = d.floor, "at the floor the takeover raised"
				case 2:
					req.Epoch, how = r.epoch/2, "at a lower epoch"
				case 3:
					req.Value, how = r.value+"'", "with another value"
				}
				mark := len(s.ex)
				if err := s.expectModel(&st, req, how); err != nil {
					return fmt.Errorf("retry %d of %d committed before the %s (%s): %w", i+1, len(d.recs), mode, how, err)
				}
				s.ex = s.ex[:mark]
			}
			if r := d.refused; r != nil {
				req := modelseq.Request{Kind: fencemodel.Put, Key: r.key, Value: r.value, Idem: r.idem, Epoch: d.floor + 1}
				if err := s.expectModel(&st, req, "refused before the restart, retried by a newer leader"); err != nil {
					return fmt.Errorf("the write refused before the %s, retried by a newer leader: %w", mode, err)
				}
			}
			return nil
		})
	}
}
