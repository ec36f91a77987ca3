package fault

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/witness/record"
)

// setNemesis sends req to the witness's run-time nemesis
// (--nemesis-runtime; Fault.WitnessRuntime).
func setNemesis(ctx context.Context, e Env, req record.NemesisRequest) (record.NemesisState, error) {
	var st record.NemesisState
	if err := e.Act().WitnessAdmin(ctx, record.PathNemesis, req, &st); err != nil {
		return st, fmt.Errorf("the witness's run-time nemesis (%s): %w", record.PathNemesis, err)
	}
	return st, nil
}
