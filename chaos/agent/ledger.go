package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/fencecheck/fencecheck/chaos/plan"
)

// DefaultLedgerDir is where the agent keeps its ledger on the node (a
// hostPath: it survives the agent's container, and /run is cleared when
// the node reboots, when every pod namespace is gone too).
const DefaultLedgerDir = "/run/fencecheck-chaos"

// Ledger is the node ledger (see plan.Entry) in one JSON file, replaced
// atomically (write a temporary file, rename): a crash leaves the old or
// the new ledger, never half of one.
type Ledger struct{ Dir string }

// LedgerState is the file's content.
type LedgerState struct {
	// Entries are the targets with cuts or freezes in place, by path.
	Entries map[string]plan.Entry `json:"entries"`
	// Injected remembers every object's first injection (by UID) until
	// the object is gone, so an edit after a heal cannot re-inject either.
	Injected map[string]plan.Injection `json:"injected"`
}

func (l *Ledger) file() string { return filepath.Join(l.Dir, "ledger.json") }

// Load reads the ledger (empty when there is none yet).
func (l *Ledger) Load() (LedgerState, error) {
	st := LedgerState{Entries: map[string]plan.Entry{}, Injected: map[string]plan.Injection{}}
	b, err := os.ReadFile(l.file())
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("ledger: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("ledger %s: %w", l.file(), err)
	}
	if st.Entries == nil {
		st.Entries = map[string]plan.Entry{}
	}
	if st.Injected == nil {
		st.Injected = map[string]plan.Injection{}
	}
	return st, nil
}

// Save replaces the ledger with st.
func (l *Ledger) Save(st LedgerState) error {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	b, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(l.Dir, ".ledger-*")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("ledger: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("ledger: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.file()); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// Paths returns the entries' paths, sorted.
func (st LedgerState) Paths() []string {
	out := make([]string, 0, len(st.Entries))
	for p := range st.Entries {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
