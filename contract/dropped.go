package contract

import (
	"fmt"
	"strconv"
)

// ParseHistoryDropped reads a HeaderHistoryDropped value: "" (a sink that
// does not say) is 0; anything but a decimal count is an error, never a
// silent 0, since a reader must not take a cut history for a whole one.
func ParseHistoryDropped(v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: not a count", HeaderHistoryDropped, v)
	}
	return n, nil
}
