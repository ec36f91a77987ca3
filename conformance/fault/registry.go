package fault

// All is every fault kind, in the order the mixed schedules draw them by
// weight (Mixed): a new kind is its file and one line here, at the end.
var All = []Fault{
	partition,
	podDelete,
	leaseDelete,
	rollingRestart,
	pause,
	heldWrites,
	lostAnswers,
	sinkCrash,
	sinkSlow,
}
